import { readFileSync } from 'node:fs';
import { printSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { schema } from '../src/graphql/schema.js';
import { REST_OPERATIONS } from '../scripts/rest-operations.js';

describe('schema/schema.graphql', () => {
  it('is the printed Pothos schema (run `npm run schema:print` after changing the schema)', () => {
    expect(readFileSync('schema/schema.graphql', 'utf8')).toBe(`${printSchema(schema)}\n`);
  });

  it('has the REST operations derived from the descriptors as written (run `npm run schema:print` after changing one)', () => {
    for (const [path, derive] of Object.entries(REST_OPERATIONS)) {
      const text = readFileSync(path, 'utf8');
      expect(text, path).toBe(derive(text));
    }
  });

  it('has the root fields the contract names', () => {
    const query = schema.getQueryType()!.getFields();
    for (const field of ['categories', 'applications', 'application', 'connections', 'connection', 'syncs', 'sync']) {
      expect(query).toHaveProperty(field);
    }
    expect(schema.getMutationType()!.getFields()).toHaveProperty('deleteConnection');
    const type = (name: string) => schema.getType(name) as unknown as { getFields(): Record<string, unknown> };
    expect(type('Connection').getFields()).toHaveProperty('application');
    expect(type('Connection').getFields()).toHaveProperty('category');
    expect(type('Connection').getFields()).toHaveProperty('syncs');
    expect(type('Application').getFields()).toHaveProperty('category');
    expect(type('Category').getFields()).toHaveProperty('applications');
  });
});
