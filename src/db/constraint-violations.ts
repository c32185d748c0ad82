import { Prisma } from '../generated/prisma/client.js';

/** Prisma's codes for the constraint violations a write turns into an answer (409, 404, "already exists"). */
const PRISMA_CODES = { unique: 'P2002', foreignKey: 'P2003' } as const;

/** Whether `error` is Prisma's report that a write broke a unique index or a foreign key. */
export function isConstraintViolation(error: unknown, constraint: keyof typeof PRISMA_CODES): boolean {
  return error instanceof Prisma.PrismaClientKnownRequestError && error.code === PRISMA_CODES[constraint];
}
