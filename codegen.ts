import type { CodegenConfig } from '@graphql-codegen/cli';

// Typed documents for the operations the REST routes run, and for the console's (console/src, written with its
// graphql() function). The schema input is the committed SDL, so codegen needs neither a database nor the running app.
const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  ignoreNoDocuments: true,
  generates: {
    'src/generated/graphql/': {
      documents: ['schema/operations/*.graphql'],
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        useTypeImports: true,
        importExtension: '.js',
        enumsAsTypes: true,
        scalars: { DateTime: 'string', JSONObject: 'Record<string, unknown>' },
        strictScalars: true,
        skipTypename: true,
      },
    },
    'console/src/generated/': {
      documents: ['console/src/**/*.tsx', 'console/src/**/*.ts', '!console/src/generated/**'],
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        useTypeImports: true,
        enumsAsTypes: true,
        scalars: { DateTime: 'string', JSONObject: 'Record<string, unknown>' },
        strictScalars: true,
        skipTypename: true,
      },
    },
  },
};

export default config;
