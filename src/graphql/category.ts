import type { GraphQLResolveInfo } from 'graphql';
import { Prisma } from '../generated/prisma/client.js';
import {
  CATEGORY_COLUMNS,
  CATEGORY_DEFAULT_KEYS,
  categorySearchSql,
  countCategories,
  readCategory,
  readCategoryPage,
  type CategoryListQuery,
} from '../db/catalog-queries.js';
import { kindOfCategory } from '../domain/category-kinds.js';
import { builder } from './builder.js';
import { sqlListField } from './paged-list.js';
import { assertIdLength } from './ids.js';
import { pageBounds } from '../query/page-bounds.js';
import { type FieldReads, selectedProperties } from './selection.js';

export const CATEGORY_PAGE = pageBounds(100, 100);

/** How Category fields read a category row: `applications` is loaded by the category's id (application.ts). */
export const categoryFieldReads: FieldReads = {
  fields: { __typename: [], applications: [], connectionKind: ['id'] },
  isProperty: (name) => Object.hasOwn(Prisma.CategoryScalarFieldEnum, name),
};

export const Category = builder.prismaObject('Category', {
  description: 'A group of catalog applications (smart locks, payments, …). Global: the same for every tenant.',
  // Rows with the columns the operation selects, as the reads below, an application read and a connection
  // read (db/catalog-queries.ts, db/connection-queries.ts) hand them back: fields resolve from the row.
  // `applications` (application.ts) is loaded for all the categories of a place in the operation at once.
  fields: (t) => ({
    id: t.exposeID('id'),
    slug: t.exposeString('slug'),
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    sortOrder: t.exposeInt('sortOrder'),
    connectionKind: t.string({
      nullable: true,
      description:
        'What its applications do (lock, pms, payments, accounting, messaging, analytics): decides the metadata and settings members their connections take. Null for a category outside the built-in catalog (its connections take the common members).',
      resolve: (category) => kindOfCategory(category.id),
    }),
  }),
});

/** The row properties the Category fields selected at `path` read (the id always; null for the whole row). */
function categoryProperties(info: GraphQLResolveInfo, path: readonly string[]): ReadonlySet<string> | null {
  return selectedProperties(info, path, categoryFieldReads);
}

sqlListField('categories', {
  item: Category,
  listDescription: 'A page of categories.',
  description: 'Catalog categories, ordered by sortOrder then name unless orderBy says otherwise.',
  permission: 'catalog:read',
  page: CATEGORY_PAGE,
  columns: CATEGORY_COLUMNS,
  defaultOrder: CATEGORY_DEFAULT_KEYS,
  search: { description: 'Case-insensitive keyword over name, slug and description.', sql: categorySearchSql },
  properties: categoryProperties,
  read: (context, query: CategoryListQuery) => readCategoryPage(context.db.raw, query),
  count: (context, query: CategoryListQuery) => countCategories(context.db.raw, query),
});

builder.queryFields((t) => ({
  category: t.field({
    type: Category,
    nullable: true,
    description: 'One category, or null when there is none with this id.',
    authScopes: { permission: 'catalog:read' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context, info) =>
      readCategory(context.db.raw, assertIdLength(args.id, 'category'), categoryProperties(info, [])),
  }),
}));
