import { queryFromInfo } from '@pothos/plugin-prisma';
import { Prisma } from '../generated/prisma/client.js';
import { builder } from './builder.js';
import { pageComplexity } from './complexity.js';
import type { Columns, PrismaColumn } from '../query/columns.js';
import { escapeLike, type OrderInput } from '../query/filter.js';
import { filterWhere, orderByOf } from '../query/prisma.js';
import { resourceFilter, resourceOrder } from './filters.js';
import { assertIdLength } from './ids.js';
import { listPage, listType, pageArgs, pageBounds, pageWindow } from './list.js';
import type { FieldReads } from './selection.js';

export const CATEGORY_COLUMNS: Columns<PrismaColumn> = {
  id: { field: 'id', kind: 'string', nullable: false },
  slug: { field: 'slug', kind: 'string', nullable: false },
  name: { field: 'name', kind: 'string', nullable: false },
  description: { field: 'description', kind: 'string', nullable: false },
};

export const CATEGORY_PAGE = pageBounds(100, 100);

/** How Category fields read a category row: `applications` is loaded by the category's id. */
export const categoryFieldReads: FieldReads = {
  fields: { __typename: [], applications: [] },
  isProperty: (name) => Object.hasOwn(Prisma.CategoryScalarFieldEnum, name),
};

export const Category = builder.prismaObject('Category', {
  description: 'A group of catalog applications (smart locks, payments, …). Global: the same for every tenant.',
  // Whole rows: a category also comes with an application or connection read (application.ts,
  // db/connection-queries.ts), so its fields resolve from the row. `applications` is planned into the
  // categories' own reads, and loaded by the category's id under an application or a connection.
  fields: (t) => ({
    id: t.exposeID('id'),
    slug: t.exposeString('slug'),
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    sortOrder: t.exposeInt('sortOrder'),
    applications: t.relation('applications', {
      description: 'Catalog applications of this category, by name.',
      query: { orderBy: [{ name: 'asc' }, { id: 'asc' }] },
    }),
  }),
});

const CategoryFilter = resourceFilter('CategoryFilter', CATEGORY_COLUMNS);

const CategoryOrder = resourceOrder('CategoryOrder', CATEGORY_COLUMNS);

const CategoryList = listType('CategoryList', Category, 'A page of categories.');

function searchWhere(search: string | null | undefined) {
  const term = search?.trim();
  if (!term) return {};
  return {
    OR: (['name', 'slug', 'description'] as const).map((column) => ({
      [column]: { contains: escapeLike(term), mode: 'insensitive' as const },
    })),
  };
}

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
    resolve: (_root, args, context, info) => {
      const { take, skip } = pageWindow(args, CATEGORY_PAGE);
      const where = { AND: [filterWhere(args.filter, CATEGORY_COLUMNS), searchWhere(args.search)] };
      const orderBy = args.orderBy?.length
        ? orderByOf(args.orderBy as OrderInput[], CATEGORY_COLUMNS, [])
        : [{ sortOrder: 'asc' }, { name: 'asc' }, { id: 'asc' }];
      const prisma = context.db.prisma;
      return listPage(
        () => prisma.category.findMany({ ...queryFromInfo({ context, info, path: ['nodes'] }), where, orderBy, take, skip }),
        () => prisma.category.count({ where }),
        take,
        skip,
      );
    },
  }),
  category: t.prismaField({
    type: 'Category',
    nullable: true,
    description: 'One category, or null when there is none with this id.',
    authScopes: { permission: 'catalog:read' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, args, context) =>
      context.db.prisma.category.findUnique({ ...query, where: { id: assertIdLength(args.id, 'category') } }),
  }),
}));
