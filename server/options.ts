/**
 * The server's own options (Note [Options by plugin] in core/config.ts): where it listens, the
 * databases it boots on (or the embedded PostgreSQL), the APIs it serves and how SIGTERM drains.
 * `--help` lists them first with the kernel's; server/boot.ts gives the unset ones their default.
 */
import * as v from '../core/valibot.js';
import { optionSchemas, withPluginDefaults, type OptionOwner, type OptionValues, type ServerConfig } from '../core/config.js';

const port = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^\d+$/, 'expected a port number'),
  v.transform(Number),
  v.number(),
  v.minValue(0, 'expected a port number between 0 and 65535'),
  v.maxValue(65535, 'expected a port number between 0 and 65535'),
);
const pgUrl = v.pipe(v.string(), v.trim(), v.regex(/^postgres(ql)?:\/\//, 'expected a postgres:// or postgresql:// URL'));

/** The APIs `--enabled-apis` switches: a disabled API's paths answer 404 (server/app.ts, and the
 * upgrades a plugin takes for one: UpgradeDef.api). */
export const APIS = ['graphql', 'metadata', 'config', 'pgdump', 'developer'] as const;
export type ApiName = (typeof APIS)[number];

export const SERVER_OPTIONS = {
  serverPort: { flag: 'server-port', env: 'SVC_GRAPHQL_SERVER_PORT', schema: port, default: 8080 },
  serverHost: { flag: 'server-host', env: 'SVC_GRAPHQL_SERVER_HOST', schema: optionSchemas.nonEmpty, default: '0.0.0.0' },
  databaseUrl: { flag: 'database-url', env: 'SVC_GRAPHQL_DATABASE_URL', schema: pgUrl, default: undefined },
  metadataDatabaseUrl: { flag: 'metadata-database-url', env: 'SVC_GRAPHQL_METADATA_DATABASE_URL', schema: pgUrl, default: undefined },
  dataDir: { flag: 'data-dir', env: 'SVC_GRAPHQL_DATA_DIR', schema: optionSchemas.nonEmpty, default: './.svc-data' },
  embeddedPgPort: { flag: 'embedded-pg-port', env: 'SVC_GRAPHQL_EMBEDDED_PG_PORT', schema: port, default: 0 },
  enabledApis: {
    flag: 'enabled-apis',
    env: 'SVC_GRAPHQL_ENABLED_APIS',
    schema: v.pipe(optionSchemas.list, v.array(v.picklist(APIS, `expected a comma-separated list of: ${APIS.join(', ')}`))),
    default: ['graphql', 'metadata', 'config', 'pgdump'] as ApiName[],
  },
  // Note [Draining]: seconds SIGTERM keeps serving with /healthz answering 503 before it stops
  // accepting connections.
  shutdownDrainTime: { flag: 'shutdown-drain-time', env: 'SVC_GRAPHQL_SHUTDOWN_DRAIN_TIME', schema: optionSchemas.positiveInt, default: 0 },
} as const;

declare module '../core/config.js' {
  interface ServerConfig extends OptionValues<typeof SERVER_OPTIONS> {}
}

/** The server's options, as loadConfig and helpText take them (before the plugins'). */
export const serverOptions: OptionOwner = { name: 'server', options: SERVER_OPTIONS };

/** `config` with the server's unset options at their default (a configuration made by
 * `defaultConfig`: tests, benchmarks). */
export const withServerDefaults = (config: ServerConfig): ServerConfig => withPluginDefaults(config, [serverOptions]);
