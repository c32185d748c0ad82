import type { GraphQLResolveInfo } from 'graphql';
import { Prisma } from '../generated/prisma/client.js';
import { searchTextSql } from '../db/list-reads.js';
import {
  APPLICATION_COLUMNS,
  countApplications,
  readApplication,
  readApplicationPage,
  readApplicationsOfCategories,
  type ApplicationListQuery,
} from '../db/catalog-queries.js';
import { builder } from './builder.js';
import { sqlListField } from './paged-list.js';
import { Category, categoryFieldReads } from './category.js';
import { assertIdLength } from './ids.js';
import { asJsonObject, jsonString, jsonStringList, type JsonObject } from './json-fields.js';
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

sqlListField('applications', {
  item: Application,
  listDescription: 'A page of catalog applications.',
  description: 'Catalog applications available to connect, by name unless orderBy says otherwise.',
  permission: 'catalog:read',
  page: APPLICATION_PAGE,
  columns: APPLICATION_COLUMNS,
  defaultOrder: [{ field: 'name' }],
  // A case-insensitive substring of name, slug, description or a keyword (the generated search_text).
  search: { description: 'Case-insensitive keyword over name, slug, description and keywords.', sql: searchTextSql },
  properties: applicationProperties,
  read: (context, query: ApplicationListQuery) => readApplicationPage(context.db.raw, query),
  count: (context, query: ApplicationListQuery) => countApplications(context.db.raw, query),
});

builder.queryFields((t) => ({
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
