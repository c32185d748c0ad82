import type { GraphQLResolveInfo } from 'graphql';
import { Prisma } from '../generated/prisma/client.js';
import {
  CATEGORY_COLUMNS,
  CATEGORY_DEFAULT_KEYS,
  categorySearchSql,
  countCategories,
  readCategory,
  readCategoryPage,
} from '../db/catalog-queries.js';
import { kindOfCategory } from '../domain/category-kinds.js';
import { builder } from './builder.js';
import { pageComplexity } from './complexity.js';
import { type OrderInput, orderKeys, searchTerm } from '../query/filter.js';
import { allOf, filterSql, keysetOrder, keyValuesOf } from '../query/sql.js';
import { resourceFilter, resourceOrder } from './filters.js';
import { assertIdLength } from './ids.js';
import { listPage, listType, pageArgs, pageWindow } from './list.js';
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

const CategoryFilter = resourceFilter('CategoryFilter', CATEGORY_COLUMNS);

const CategoryOrder = resourceOrder('CategoryOrder', CATEGORY_COLUMNS);

const CategoryList = listType('CategoryList', Category, 'A page of categories.');

builder.queryFields((t) => ({
  categories: t.field({
    complexity: pageComplexity(CATEGORY_PAGE),
    type: CategoryList,
    description: 'Catalog categories, ordered by sortOrder then name unless orderBy says otherwise.',
    authScopes: { permission: 'catalog:read' },
    args: {
      filter: t.arg({ type: CategoryFilter }),
      search: t.arg.string({ description: 'Case-insensitive keyword over name, slug and description.' }),
      orderBy: t.arg({ type: [CategoryOrder] }),
      ...pageArgs(t.arg, CATEGORY_PAGE),
    },
    resolve: async (_root, args, context, info) => {
      const orderBy = args.orderBy as OrderInput[] | null | undefined;
      const keys = orderBy?.length ? orderKeys(orderBy, CATEGORY_COLUMNS, []) : CATEGORY_DEFAULT_KEYS;
      const window = await pageWindow(args, CATEGORY_PAGE, context, { list: 'categories', args, keyCount: keys.length });
      const query = {
        where: allOf([filterSql(args.filter, CATEGORY_COLUMNS), categorySearchSql(searchTerm(args.search))]),
        ...keysetOrder(keys, window.after),
        take: window.take,
        skip: window.skip,
        properties: categoryProperties(info, ['nodes']),
      };
      return listPage(
        (take) => readCategoryPage(context.db.raw, { ...query, take }),
        () => countCategories(context.db.raw, query),
        window,
        (row) => keyValuesOf(row as unknown as Record<string, unknown>, keys.length),
      );
    },
  }),
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
