// Writes schema/schema.graphql from the Pothos schema. The file is committed; test/schema.test.ts fails when
// it is stale, so schema changes show up in review as SDL diffs.
import { writeFileSync } from 'node:fs';
import { printSchema } from 'graphql';
import { schema } from '../src/graphql/schema.js';

writeFileSync('schema/schema.graphql', `${printSchema(schema)}\n`);
