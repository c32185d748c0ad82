import type { CodegenConfig } from '@graphql-codegen/cli';

// Typed documents for the operations the REST routes run. The schema input is the committed SDL, so codegen
// needs neither a database nor the running app.
const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  documents: ['schema/operations/*.graphql'],
  ignoreNoDocuments: true,
  generates: {
    'src/generated/graphql/': {
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
  },
};

export default config;
