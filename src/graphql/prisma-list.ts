import type { Context } from '../context.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { PrismaColumn } from '../query/columns.js';
import type { OrderInput } from '../query/filter.js';
import { type PageBounds, pageBounds } from '../query/page-bounds.js';
import { afterWhere, fieldKeyValues, filterWhere, orderByKeys, searchWhere } from '../query/prisma.js';
import { listPage } from './list.js';
import { type PagedList, pagedListField } from './paged-list.js';
import { requireViewer } from './viewer.js';

type Where = Record<string, unknown>;

/** What a list reads of its Prisma model (`prisma.member`, …). */
interface ModelReads<Row> {
  findMany(args: { where: Where; orderBy: Where[]; take: number; skip: number; omit?: Where }): Promise<Row[]>;
  count(args: { where: Where }): Promise<number>;
}

/** Newest first, the id breaking ties between rows of one instant. */
export const NEWEST_FIRST: readonly OrderInput[] = [{ field: 'createdAt', direction: 'DESC' }];

/** A paged list of one Prisma model, within the caller's tenant: what differs from one such list to the next. */
interface PrismaList<Row extends object> extends Omit<PagedList<Row, PrismaColumn>, 'page'> {
  /** The fields `search` looks in, and what its argument says of them. */
  search: { fields: readonly string[]; description: string };
  /** Default: 100 rows a page, at most 100, as most lists. */
  page?: PageBounds;
  model: (prisma: PrismaClient) => ModelReads<NoInfer<Row>>;
  /** Columns the rows leave out. */
  omit?: Where;
  /** The conditions the arguments before the filter's add (checked after the page's arguments). */
  where?: (args: Readonly<Record<string, unknown>>, context: Context) => Promise<Where>;
}

/**
 * Declares `Query.<field>` (paged-list.ts): a page of a Prisma model's rows of the caller's tenant, the limit
 * described with its bounds.
 */
export function prismaListField<Row extends object>(field: string, list: PrismaList<Row>) {
  const page = list.page ?? pageBounds(100, 100);
  const limitDescription = `Default ${page.defaultLimit}, at most ${page.maxLimit}.`;
  pagedListField(field, { ...list, page }, limitDescription, async (args, context, _info, keys, window) => {
    const where = {
      tenantId: requireViewer(context).tenantId,
      ...(await list.where?.(args, context)),
      AND: [filterWhere(args.filter as Where | null | undefined, list.columns), searchWhere(args.search, list.search.fields)],
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
  });
}
