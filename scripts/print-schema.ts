// Writes schema/schema.graphql from the Pothos schema, and the REST operations derived from the resources'
// descriptors (rest-operations.ts). The files are committed; test/schema.test.ts fails when one is stale, so
// schema changes show up in review as SDL diffs.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { printSchema } from 'graphql';
import { schema } from '../src/graphql/schema.js';
import { REST_OPERATIONS } from './rest-operations.js';

writeFileSync('schema/schema.graphql', `${printSchema(schema)}\n`);
for (const [path, derive] of Object.entries(REST_OPERATIONS))
  writeFileSync(path, derive(existsSync(path) ? readFileSync(path, 'utf8') : ''));
