import type { GraphQLResolveInfo } from 'graphql';
import { Prisma } from '../generated/prisma/client.js';
import { searchTextSql } from '../db/list-reads.js';
import {
  APPLICATION_COLUMNS,
  countApplications,
  readApplication,
  readApplicationPage,
  readApplicationsOfCategories,
} from '../db/catalog-queries.js';
import { builder } from './builder.js';
import { Category, categoryFieldReads } from './category.js';
import { pageComplexity } from './complexity.js';
import { type OrderInput, orderKeys, searchTerm } from '../query/filter.js';
import { allOf, filterSql, keysetOrder, keyValuesOf } from '../query/sql.js';
import { resourceFilter, resourceOrder } from './filters.js';
import { assertIdLength } from './ids.js';
import { asJsonObject, jsonString, jsonStringList, type JsonObject } from './json-fields.js';
import { listPage, listType, pageArgs, pageWindow } from './list.js';
import { pageBounds } from '../query/page-bounds.js';
import { type FieldReads, selectedProperties } from './selection.js';

export const APPLICATION_PAGE = pageBounds(100, 100);

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

/** How Application fields read an application row: `applicationId` is a constant, the category comes with the row. */
export const applicationFieldReads: FieldReads = {
  fields: { __typename: [], applicationId: [] },
  objects: { category: { prefix: 'category.', reads: categoryFieldReads } },
  isProperty: (name) => Object.hasOwn(Prisma.ApplicationScalarFieldEnum, name),
};

export const Application = builder.prismaObject('Application', {
  description: 'A catalog entry: an application a tenant can connect. Global: the same for every tenant.',
  // Whole rows with the category, as the catalog's reads below and a connection read (db/connection-queries.ts)
  // hand them back, with the columns and the category when the operation selects them: fields resolve from
  // the row, without plugin-prisma's per-field bookkeeping of its select mode.
  include: { category: true },
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
    features: t.field({ type: Features, resolve: (a) => asJsonObject(a.features) }),
    additionalInformation: t.exposeString('additionalInformation', { description: 'HTML.' }),
    categoryId: t.exposeString('categoryId'),
    category: t.field({ type: Category, resolve: (a) => a.category }),
  }),
});

/** The row properties the Application fields selected at `path` read (the id always; null for the whole row). */
function applicationProperties(info: GraphQLResolveInfo, path: readonly string[]): ReadonlySet<string> | null {
  return selectedProperties(info, path, applicationFieldReads);
}

// Category.applications, declared here where the Application type lives: the applications of all the categories
// of a place in the operation (`byPath`) from one statement, grouped by category.
builder.prismaObjectFields('Category', (t) => ({
  applications: t.loadableGroup({
    type: Application,
    description: 'Catalog applications of this category, by name.',
    byPath: true,
    load: (ids: string[], context, _args, info: GraphQLResolveInfo) =>
      readApplicationsOfCategories(context.db.raw, ids, applicationProperties(info, [])),
    group: (application) => application.categoryId,
    resolve: (category) => category.id,
  }),
}));

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
    resolve: async (_root, args, context, info) => {
      const keys = orderKeys(args.orderBy as OrderInput[] | null, APPLICATION_COLUMNS, [{ field: 'name' }]);
      const window = await pageWindow(args, APPLICATION_PAGE, context, { list: 'applications', args, keyCount: keys.length });
      const query = {
        // `search`: case-insensitive substring of name, slug, description or a keyword (the generated search_text).
        where: allOf([filterSql(args.filter, APPLICATION_COLUMNS), searchTextSql(searchTerm(args.search))]),
        ...keysetOrder(keys, window.after),
        take: window.take,
        skip: window.skip,
        properties: applicationProperties(info, ['nodes']),
      };
      return listPage(
        (take) => readApplicationPage(context.db.raw, { ...query, take }),
        () => countApplications(context.db.raw, query),
        window,
        (row) => keyValuesOf(row as unknown as Record<string, unknown>, keys.length),
      );
    },
  }),
  application: t.field({
    type: Application,
    nullable: true,
    description: 'One catalog application, or null when there is none with this id.',
    authScopes: { permission: 'catalog:read' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context, info) =>
      readApplication(context.db.raw, assertIdLength(args.id, 'application'), applicationProperties(info, [])),
  }),
}));
