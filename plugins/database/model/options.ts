/**
 * The database plugin's options (Note [Options by plugin] in core/config.ts): Hasura's
 * HASURA_GRAPHQL_INFER_FUNCTION_PERMISSIONS and HASURA_GRAPHQL_STRINGIFY_NUMERIC_TYPES, renamed.
 */
import type { OptionValues } from '../../../core/config.js';
import { optionSchemas } from '../../../core/config.js';

const { bool } = optionSchemas;

export const DATABASE_OPTIONS = {
  inferFunctionPermissions: {
    flag: 'infer-function-permissions',
    env: 'SVC_GRAPHQL_INFER_FUNCTION_PERMISSIONS',
    schema: bool,
    default: true,
  },
  stringifyNumericTypes: {
    flag: 'stringify-numeric-types',
    env: 'SVC_GRAPHQL_STRINGIFY_NUMERIC_TYPES',
    schema: bool,
    default: false,
  },
} as const;

declare module '../../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof DATABASE_OPTIONS> {}
}
