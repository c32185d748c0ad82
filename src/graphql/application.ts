import { queryFromInfo } from '@pothos/plugin-prisma';
import { builder } from './builder.js';
import { pageComplexity } from './complexity.js';
import type { Columns, PrismaColumn } from '../query/columns.js';
import { escapeLike, type OrderInput, searchTerm } from '../query/filter.js';
import { filterWhere, orderByOf } from '../query/prisma.js';
import { resourceFilter, resourceOrder } from './filters.js';
import { assertIdLength } from './ids.js';
import { asJsonObject, jsonString, jsonStringList, type JsonObject } from './json-fields.js';
import { listPage, listType, pageArgs, pageBounds, pageWindow } from './list.js';

export const APPLICATION_COLUMNS: Columns<PrismaColumn> = {
  id: { field: 'id', kind: 'string', nullable: false },
  name: { field: 'name', kind: 'string', nullable: false },
  slug: { field: 'slug', kind: 'string', nullable: false },
  description: { field: 'description', kind: 'string', nullable: false },
  logoUrl: { field: 'logoUrl', kind: 'string', nullable: false },
  additionalInformation: { field: 'additionalInformation', kind: 'string', nullable: false },
  categoryId: { field: 'categoryId', kind: 'string', nullable: false },
};

export const APPLICATION_PAGE = pageBounds(100, 100);

/** `search`: case-insensitive substring of name, slug, description or a keyword (the generated search_text). */
export function keywordSearchWhere(search: string | null | undefined) {
  const term = searchTerm(search);
  return term ? { searchText: { contains: escapeLike(term) } } : {};
}

const Feature = builder.objectRef<JsonObject>('Feature').implement({
  fields: (t) => ({
    name: t.string({ resolve: (f) => jsonString(f, 'name') ?? '' }),
    content: t.string({ description: 'HTML.', resolve: (f) => jsonString(f, 'content') ?? '' }),
    imageUrls: t.stringList({ resolve: (f) => jsonStringList(f, 'image_urls') ?? [] }),
  }),
});

export const Features = builder.objectRef<JsonObject>('Features').implement({
  description: 'Marketing description of an application: a title and feature sections with HTML content.',
  fields: (t) => ({
    title: t.string({ resolve: (f) => jsonString(f, 'title') ?? '' }),
    features: t.field({
      type: [Feature],
      // Catalog copy, a handful of sections per application: counted as 10 in a document's cost.
      complexity: { field: 1, multiplier: 10 },
      resolve: (f) => (Array.isArray(f.features) ? f.features.map(asJsonObject) : []),
    }),
  }),
});

export const Application = builder.prismaObject('Application', {
  description: 'A catalog entry: an application a tenant can connect. Global: the same for every tenant.',
  select: { id: true },
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    slug: t.exposeString('slug'),
    applicationId: t.string({
      description: 'Always an empty string for catalog entries (the spec shows it so); connections carry the id.',
      resolve: () => '',
    }),
    description: t.exposeString('description'),
    logoUrl: t.exposeString('logoUrl'),
    keywords: t.exposeStringList('keywords'),
    features: t.field({ type: Features, select: { features: true }, resolve: (a) => asJsonObject(a.features) }),
    additionalInformation: t.exposeString('additionalInformation', { description: 'HTML.' }),
    categoryId: t.exposeString('categoryId'),
    category: t.relation('category'),
  }),
});

const ApplicationFilter = resourceFilter('ApplicationFilter', APPLICATION_COLUMNS);

const ApplicationOrder = resourceOrder('ApplicationOrder', APPLICATION_COLUMNS);
const ApplicationList = listType('ApplicationList', Application, 'A page of catalog applications.');

builder.queryFields((t) => ({
  applications: t.field({
    type: ApplicationList,
    complexity: pageComplexity(APPLICATION_PAGE),
    description: 'Catalog applications available to connect, by name unless orderBy says otherwise.',
    authScopes: { permission: 'catalog:read' },
    args: {
      filter: t.arg({ type: ApplicationFilter }),
      search: t.arg.string({ description: 'Case-insensitive keyword over name, slug, description and keywords.' }),
      orderBy: t.arg({ type: [ApplicationOrder] }),
      ...pageArgs(t.arg, APPLICATION_PAGE),
    },
    resolve: (_root, args, context, info) => {
      const { take, skip } = pageWindow(args, APPLICATION_PAGE);
      const where = { AND: [filterWhere(args.filter, APPLICATION_COLUMNS), keywordSearchWhere(args.search)] };
      const orderBy = orderByOf(args.orderBy as OrderInput[] | null, APPLICATION_COLUMNS, [{ field: 'name' }]);
      const prisma = context.db.prisma;
      return listPage(
        () => prisma.application.findMany({ ...queryFromInfo({ context, info, path: ['nodes'] }), where, orderBy, take, skip }),
        () => prisma.application.count({ where }),
        take,
        skip,
      );
    },
  }),
  application: t.prismaField({
    type: 'Application',
    nullable: true,
    description: 'One catalog application, or null when there is none with this id.',
    authScopes: { permission: 'catalog:read' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, args, context) =>
      context.db.prisma.application.findUnique({ ...query, where: { id: assertIdLength(args.id, 'application') } }),
  }),
}));
