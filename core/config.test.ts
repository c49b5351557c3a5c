/** Configuration from flags and SVC_GRAPHQL_* variables: defaults, precedence, and errors that name the culprit. */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { ConfigError, helpText, loadConfig, optionSchemas } from './config.js';
import { builtinOptions, builtinPlugins } from '../server/plugins.js';
import { serverOptions } from '../server/options.js';
import { VERSION } from '../server/app.js';

describe('loadConfig', () => {
  it('has working defaults', () => {
    const c = loadConfig([], {}, [serverOptions]);
    expect(c).toMatchObject({
      serverPort: 8080,
      serverHost: '0.0.0.0',
      databaseUrl: undefined,
      metadataDatabaseUrl: undefined,
      dataDir: './.svc-data',
      adminSecret: undefined,
      enabledApis: ['graphql', 'metadata', 'config', 'pgdump'],
      disabledPlugins: [],
      unauthorizedRole: undefined,
      devMode: false,
      logLevel: 'info',
    });
    // The GraphQL plugin's options are its own (Note [Options by plugin]), and so are the server's.
    expect(c).not.toHaveProperty('graphqlPlanCacheSize');
    expect(loadConfig([], {})).not.toHaveProperty('serverPort');
    expect(loadConfig([], {})).toMatchObject({ adminSecret: undefined, disabledPlugins: [], logLevel: 'info', maxJsonDepth: 100 });
    expect(loadConfig([], {}, builtinPlugins)).toMatchObject({ graphqlPlanCacheSize: 4000, graphqlMaxDepth: 50, websocketKeepalive: 5, enableRemoteSchemaPermissions: false });
  });

  it('reads env vars, and flags win over them', () => {
    const env = {
      SVC_GRAPHQL_SERVER_PORT: '9000',
      SVC_GRAPHQL_DATABASE_URL: 'postgres://u:p@h:5432/db',
      SVC_GRAPHQL_METADATA_DATABASE_URL: 'postgresql://u@h/meta',
      SVC_GRAPHQL_ADMIN_SECRET: 's',
      SVC_GRAPHQL_ENABLED_APIS: 'graphql, metadata',
      SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS: 'TRUE',
      SVC_GRAPHQL_DISABLED_PLUGINS: 'a,b',
      SVC_GRAPHQL_UNAUTHORIZED_ROLE: 'anonymous',
      SVC_GRAPHQL_DEV_MODE: 'true',
      SVC_GRAPHQL_LOG_LEVEL: 'WARN',
    };
    const c = loadConfig(['--server-port=9001', '--dev-mode', 'false', '--enable-remote-schema-permissions'], env, builtinOptions);
    expect(c).toMatchObject({
      serverPort: 9001,
      databaseUrl: 'postgres://u:p@h:5432/db',
      metadataDatabaseUrl: 'postgresql://u@h/meta',
      adminSecret: 's',
      enabledApis: ['graphql', 'metadata'],
      enableRemoteSchemaPermissions: true,
      disabledPlugins: ['a', 'b'],
      unauthorizedRole: 'anonymous',
      devMode: false,
      logLevel: 'warn',
    });
  });

  const bad: [string[], Record<string, string>, string][] = [
    [[], { SVC_GRAPHQL_SERVER_PORT: '70000' }, 'invalid value for SVC_GRAPHQL_SERVER_PORT: "70000"'],
    [['--server-port', 'x'], {}, 'invalid value for --server-port: "x": expected a port number'],
    [[], { SVC_GRAPHQL_SERVER_HOST: '' }, ''],
    [['--server-host='], {}, 'invalid value for --server-host: "": must not be empty'],
    [[], { SVC_GRAPHQL_DATABASE_URL: 'mysql://x' }, 'invalid value for SVC_GRAPHQL_DATABASE_URL: "mysql://x": expected a postgres:// or postgresql:// URL'],
    [[], { SVC_GRAPHQL_METADATA_DATABASE_URL: 'nope' }, 'invalid value for SVC_GRAPHQL_METADATA_DATABASE_URL'],
    [['--admin-secret='], {}, 'invalid value for --admin-secret: "": must not be empty'],
    [[], { SVC_GRAPHQL_ENABLED_APIS: 'graphql,rest' }, 'invalid value for SVC_GRAPHQL_ENABLED_APIS: "graphql,rest": expected a comma-separated list of'],
    [[], { SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS: 'maybe' }, 'invalid value for SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS: "maybe": expected a boolean'],
    [['--unauthorized-role='], {}, 'invalid value for --unauthorized-role'],
    [[], { SVC_GRAPHQL_DEV_MODE: '2' }, 'invalid value for SVC_GRAPHQL_DEV_MODE'],
    [['--graphql-plan-cache-size', 'many'], {}, 'invalid value for --graphql-plan-cache-size: "many": expected a non-negative integer'],
    [[], { SVC_GRAPHQL_LOG_LEVEL: 'loud' }, 'invalid value for SVC_GRAPHQL_LOG_LEVEL: "loud": expected one of debug, info, warn, error'],
    [['--nope'], {}, 'unknown flag --nope'],
    [['stray'], {}, 'unexpected argument "stray"'],
    [['--server-port'], {}, 'flag --server-port needs a value'],
  ];
  for (const [argv, env, message] of bad) {
    if (message === '') {
      it('an empty env var counts as unset', () => expect(loadConfig(argv, env, builtinOptions).serverHost).toBe('0.0.0.0'));
      continue;
    }
    it(`refuses ${JSON.stringify(argv.length ? argv : env)}`, () => {
      expect(() => loadConfig(argv, env, builtinOptions)).toThrow(ConfigError);
      expect(() => loadConfig(argv, env, builtinOptions)).toThrow(message);
    });
  }
});

describe('--help and --version', () => {
  it('the help lists every option with its environment variable and default, plugins\' under their plugin', () => {
    const text = helpText(builtinOptions);
    const lines = text.split('\n');
    for (const [flag, env, dflt] of [
      ['--server-port', 'SVC_GRAPHQL_SERVER_PORT', '8080'],
      ['--stringify-numeric-types', 'SVC_GRAPHQL_STRINGIFY_NUMERIC_TYPES', 'false'],
      ['--enabled-apis', 'SVC_GRAPHQL_ENABLED_APIS', 'graphql,metadata,config,pgdump'],
      ['--admin-secret', 'SVC_GRAPHQL_ADMIN_SECRET', '(none)'],
      ['--events-fetch-batch-size', 'SVC_GRAPHQL_EVENTS_FETCH_BATCH_SIZE', '100'],
      ['--enable-console', 'SVC_GRAPHQL_ENABLE_CONSOLE', 'true'],
    ]) {
      expect(lines.find((l) => l.startsWith(`${flag} `))?.split(/\s+/), flag).toEqual([flag, env, dflt]);
    }
    // Every option loadConfig knows is listed.
    expect(lines.filter((l) => /^--[a-z]/.test(l) && !/^--(help|version) /.test(l))).toHaveLength(Object.keys(loadConfig([], {}, builtinOptions)).length);
    // A plugin's options come after a line naming it.
    expect(lines.indexOf('(plugin console)')).toBeLessThan(lines.findIndex((l) => l.startsWith('--enable-console ')));
    expect(lines.indexOf('(plugin console)')).toBeGreaterThan(lines.findIndex((l) => l.startsWith('--server-port ')));
  });

  it("a plugin's option is read from its flag or variable, and is unknown without the plugin", () => {
    expect(loadConfig(['--events-fetch-interval', '5'], {}, builtinPlugins).eventsFetchInterval).toBe(5);
    expect(loadConfig([], { SVC_GRAPHQL_EVENTS_FETCH_INTERVAL: '7' }, builtinPlugins).eventsFetchInterval).toBe(7);
    expect(() => loadConfig(['--events-fetch-interval', '0'], {}, builtinPlugins)).toThrow('invalid value for --events-fetch-interval: "0": expected an integer of at least 1');
    expect(() => loadConfig(['--events-fetch-interval', '5'], {})).toThrow('unknown flag --events-fetch-interval');
    expect(() => loadConfig([], {}, [{ name: 'a', options: { x: { flag: 'admin-secret', env: 'X', schema: optionSchemas.bool, default: false } } }])).toThrow('declared twice');
  });

  it('the server prints them and exits 0, with or without the serve command', () => {
    const run = (...args: string[]) => execFileSync(process.execPath, ['--import', 'tsx', 'server/main.ts', ...args], { encoding: 'utf8' });
    expect(run('--version').trim()).toBe(VERSION);
    expect(run('serve', '--help')).toBe(`${helpText(builtinOptions)}\n`);
  }, 60_000);
});
