import type { ArgBuilder, EnumRef, InputFieldMap, ObjectRef } from '@pothos/core';
import type { Permission } from '../auth/permissions.js';
import type { Context } from '../context.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Columns, PrismaColumn } from '../query/columns.js';
import { type OrderInput, type OrderKey, orderKeys } from '../query/filter.js';
import { type PageBounds, pageBounds } from '../query/page-bounds.js';
import { afterWhere, fieldKeyValues, filterWhere, orderByKeys, searchWhere } from '../query/prisma.js';
import { builder } from './builder.js';
import { pageComplexity } from './complexity.js';
import { resourceFilter, resourceOrder } from './filters.js';
import { listPage, listType, pageArgs, pageWindow } from './list.js';
import { requireViewer } from './viewer.js';

type Where = Record<string, unknown>;

/** What a list reads of its Prisma model (`prisma.member`, …). */
interface ModelReads<Row> {
  findMany(args: { where: Where; orderBy: Where[]; take: number; skip: number; omit?: Where }): Promise<Row[]>;
  count(args: { where: Where }): Promise<number>;
}

type Types = typeof builder.$inferSchemaTypes;

/** Newest first, the id breaking ties between rows of one instant. */
export const NEWEST_FIRST: readonly OrderInput[] = [{ field: 'createdAt', direction: 'DESC' }];

/** A paged list of one Prisma model, within the caller's tenant: what differs from one such list to the next. */
interface PrismaList<Row extends object> {
  item: ObjectRef<Types, Row>;
  /** The list's filter, order and page types are `<name>Filter`, `<name>Order`, `<name>List`; default: the item's name. */
  name?: string;
  listDescription: string;
  description: string;
  permission: Permission;
  columns: Columns<PrismaColumn>;
  /** The enum types of the columns of kind enum. */
  enums?: Readonly<Record<string, EnumRef<Types, string, string>>>;
  /** The order when the caller gives none: as a caller gives one, or as sort keys (for keys beyond the columns). */
  defaultOrder: readonly OrderInput[] | readonly OrderKey<PrismaColumn>[];
  /** The fields `search` looks in, and what its argument says of them. */
  search: { fields: readonly string[]; description: string };
  /** Default: 100 rows a page, at most 100, as most lists. */
  page?: PageBounds;
  model: (prisma: PrismaClient) => ModelReads<NoInfer<Row>>;
  /** Columns the rows leave out. */
  omit?: Where;
  /** Arguments before the filter's, and the conditions they add (checked after the page's arguments). */
  args?: (arg: ArgBuilder<Types>) => InputFieldMap;
  where?: (args: Readonly<Record<string, unknown>>, context: Context) => Promise<Where>;
}

/**
 * Declares `Query.<field>`: a page of a Prisma model's rows of the caller's tenant, with filter, search,
 * orderBy and the page arguments (limit, offset, after), as the REST list routes run it.
 */
export function prismaListField<Row extends object>(field: string, list: PrismaList<Row>) {
  const { columns, defaultOrder, page = pageBounds(100, 100) } = list;
  const name = list.name ?? list.item.name;
  const filter = resourceFilter(`${name}Filter`, columns, list.enums);
  const order = resourceOrder(`${name}Order`, columns);
  const type = listType(`${name}List`, list.item, list.listDescription);
  const defaultKeys = defaultOrder.every((key) => 'column' in key)
    ? defaultOrder
    : orderKeys(null, columns, defaultOrder as readonly OrderInput[]);
  builder.queryField(field, (t) =>
    t.field({
      type,
      complexity: pageComplexity(page),
      description: list.description,
      authScopes: { permission: list.permission },
      args: {
        ...list.args?.(t.arg),
        filter: t.arg({ type: filter }),
        search: t.arg.string({ description: list.search.description }),
        orderBy: t.arg({ type: [order] }),
        ...pageArgs(t.arg, page, { limitDescription: `Default ${page.defaultLimit}, at most ${page.maxLimit}.` }),
      },
      resolve: async (_root, args, context) => {
        const orderBy = args.orderBy as OrderInput[] | null | undefined;
        const keys = orderBy?.length ? orderKeys(orderBy, columns, []) : defaultKeys;
        const window = await pageWindow(args, page, context, { list: field, args, keyCount: keys.length });
        const where = {
          tenantId: requireViewer(context).tenantId,
          ...(await list.where?.(args, context)),
          AND: [filterWhere(args.filter, columns), searchWhere(args.search, list.search.fields)],
        };
        const start = window.after ? afterWhere(keys, window.after) : {};
        const model = list.model(context.db.prisma);
        return listPage(
          (take) =>
            model.findMany({
              where: { ...where, AND: [...where.AND, start] },
              orderBy: orderByKeys(keys),
              take,
              skip: window.skip,
              ...(list.omit ? { omit: list.omit } : {}),
            }),
          () => model.count({ where }),
          window,
          (row) => fieldKeyValues(keys, row as Record<string, unknown>),
        );
      },
    }),
  );
}
