/**
 * Configuration: tables of options, each from a flag (`--log-level debug` or `--log-level=debug`)
 * or an environment variable (`SVC_GRAPHQL_LOG_LEVEL`); flags win. Every value is validated with
 * valibot at boot; a bad value names the flag or variable. The kernel's own options are below;
 * the server's (server/options.ts) and each plugin's are declared by their owner.
 */
import * as v from './valibot.js';

const bool = v.pipe(
  v.string(),
  v.trim(),
  v.toLowerCase(),
  v.picklist(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], 'expected a boolean (true or false)'),
  v.transform((s) => ['true', '1', 'yes', 'on'].includes(s)),
);
const positiveInt = v.pipe(v.string(), v.trim(), v.regex(/^\d+$/, 'expected a non-negative integer'), v.transform(Number));
const atLeastOne = v.pipe(positiveInt, v.minValue(1, 'expected an integer of at least 1'));
const list = v.pipe(
  v.string(),
  v.transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean)),
);
const nonEmpty = v.pipe(v.string(), v.minLength(1, 'must not be empty'));
const httpUrl = v.pipe(v.string(), v.trim(), v.regex(/^https?:\/\/\S+$/, 'expected an http:// or https:// URL'));

const OPTIONS = {
  adminSecret: { flag: 'admin-secret', env: 'SVC_GRAPHQL_ADMIN_SECRET', schema: nonEmpty, default: undefined, secret: true },
  disabledPlugins: { flag: 'disable-plugins', env: 'SVC_GRAPHQL_DISABLED_PLUGINS', schema: list, default: [] as string[] },
  unauthorizedRole: {
    flag: 'unauthorized-role',
    env: 'SVC_GRAPHQL_UNAUTHORIZED_ROLE',
    schema: nonEmpty,
    default: undefined,
  },
  devMode: { flag: 'dev-mode', env: 'SVC_GRAPHQL_DEV_MODE', schema: bool, default: false },
  logLevel: {
    flag: 'log-level',
    env: 'SVC_GRAPHQL_LOG_LEVEL',
    schema: v.pipe(v.string(), v.trim(), v.toLowerCase(), v.picklist(['debug', 'info', 'warn', 'error'], 'expected one of debug, info, warn, error')),
    default: 'info' as 'debug' | 'info' | 'warn' | 'error',
  },
  metadataSyncInterval: {
    flag: 'metadata-sync-interval',
    env: 'SVC_GRAPHQL_METADATA_SYNC_INTERVAL',
    schema: positiveInt,
    default: 1000,
  },
  gracefulShutdownTimeout: {
    flag: 'graceful-shutdown-timeout',
    env: 'SVC_GRAPHQL_GRACEFUL_SHUTDOWN_TIMEOUT',
    schema: positiveInt,
    default: 30,
  },
  // Note [Request limits] in lib/http/body.ts: every JSON endpoint's body, whoever serves it.
  maxRequestBodySize: {
    flag: 'max-request-body-size',
    env: 'SVC_GRAPHQL_MAX_REQUEST_BODY_SIZE',
    schema: positiveInt,
    default: 32 * 1024 * 1024,
  },
  maxJsonDepth: { flag: 'max-json-depth', env: 'SVC_GRAPHQL_MAX_JSON_DEPTH', schema: positiveInt, default: 100 },
  maxListLength: { flag: 'max-list-length', env: 'SVC_GRAPHQL_MAX_LIST_LENGTH', schema: positiveInt, default: 100_000 },
} as const;

/*
 * Note [Options by plugin]
 * The kernel's own options are the table above; the server's (where it listens, the databases it
 * boots on, the APIs it serves) are server/options.ts's, an owner named `server` listed first
 * and without a heading by `--help`. A plugin declares its own in its definition
 * (PluginDef.options: flag, environment variable, valibot schema of the text, default, help), and
 * types them by adding them to ServerConfig (declaration merging:
 * `declare module '../../core/config.js' { interface ServerConfig extends OptionValues<typeof MY_OPTIONS> {} }`).
 * `loadConfig` reads every option of the plugins it is given (enabled or not: a disabled
 * plugin's flags are still accepted, and ignored), `--help` lists them under their plugin, and
 * the kernel gives every plugin option that was not set its default (`withPluginDefaults`), so a
 * configuration made by `defaultConfig` (tests, embedders) holds them too.
 */

/** An option: a flag and an environment variable, the schema that reads its text, its default. */
export interface OptionDef {
  readonly flag: string;
  readonly env: string;
  readonly schema: v.GenericSchema<string, unknown>;
  readonly default: unknown;
  /** Its value is never repeated in a message. */
  readonly secret?: boolean;
}

/** The values of a table of options. */
export type OptionValues<O extends Record<string, OptionDef>> = {
  -readonly [K in keyof O]: O[K]['default'] extends undefined ? v.InferOutput<O[K]['schema']> | undefined : v.InferOutput<O[K]['schema']>;
};

/** The schemas the kernel reads its options with, for plugins' options. */
export const optionSchemas = { bool, positiveInt, atLeastOne, list, httpUrl, nonEmpty };

export type KernelConfig = OptionValues<typeof OPTIONS>;

/** The server's configuration: the kernel's options, and those plugins add (Note [Options by
 * plugin]). */
export interface ServerConfig extends KernelConfig {}

/** What loadConfig needs of a plugin. */
export interface OptionOwner {
  readonly name: string;
  readonly options?: Readonly<Record<string, OptionDef>>;
  checkOptions?(config: ServerConfig): string | undefined;
}

function tables(plugins: readonly OptionOwner[]): [string, Readonly<Record<string, OptionDef>>][] {
  const out: [string, Readonly<Record<string, OptionDef>>][] = [['kernel', OPTIONS as unknown as Record<string, OptionDef>]];
  // The server's own (server/options.ts) come first in --help, then the kernel's, then plugins'.
  for (const p of plugins) if (p.options) p.name === 'server' ? out.unshift([p.name, p.options]) : out.push([p.name, p.options]);
  return out;
}

/** `config` with every plugin option it does not set at its default (Note [Options by plugin]). */
export function withPluginDefaults(config: ServerConfig, plugins: readonly OptionOwner[]): ServerConfig {
  const out: Record<string, unknown> = { ...config };
  for (const p of plugins) for (const [key, o] of Object.entries(p.options ?? {})) if (!(key in out)) out[key] = o.default;
  return out as unknown as ServerConfig;
}

export class ConfigError extends Error {}

/** Reads flags and environment; throws ConfigError naming the offending flag or variable. */
/** `--help`: every option with its environment variable and default. */
export function helpText(plugins: readonly OptionOwner[] = []): string {
  const show = (d: unknown) => (d === undefined ? '(none)' : Array.isArray(d) ? (d.length ? d.join(',') : '(none)') : String(d));
  const sections = tables(plugins).map(([owner, t]) => [owner, Object.values(t).map((o) => [`--${o.flag}`, o.env, show(o.default)])] as const);
  const all = sections.flatMap(([, rows]) => rows);
  const w0 = Math.max(...all.map((r) => r[0]!.length));
  const w1 = Math.max(...all.map((r) => r[1]!.length));
  return [
    'Usage: svc [serve] [--flag value | --flag=value]...',
    '',
    'Every option is a flag or an environment variable; the flag wins. Boolean flags may be given alone.',
    '',
    `${'flag'.padEnd(w0)}  ${'environment variable'.padEnd(w1)}  default`,
    ...sections.flatMap(([owner, rows]) => [
      owner === 'kernel' || owner === 'server' ? '' : `\n(plugin ${owner})`,
      ...rows.map((r) => `${r[0]!.padEnd(w0)}  ${r[1]!.padEnd(w1)}  ${r[2]}`),
    ]).filter((l, i) => i > 0 || l !== ''),
    '',
    '--help     this text',
    '--version  the version',
  ].join('\n');
}

export function loadConfig(argv: string[], env: Record<string, string | undefined>, plugins: readonly OptionOwner[] = []): ServerConfig {
  const flags = new Map<string, string>();
  const options: Record<string, OptionDef> = {};
  const byFlag = new Map<string, OptionDef>();
  for (const [owner, t] of tables(plugins)) {
    for (const [key, o] of Object.entries(t)) {
      // Two owners of one option are a programming error, reported at every start.
      if (key in options || byFlag.has(o.flag)) throw new Error(`the option ${key} (--${o.flag}) of ${owner} is declared twice`);
      options[key] = o;
      byFlag.set(o.flag, o);
    }
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new ConfigError(`unexpected argument "${a}"`);
    const eq = a.indexOf('=');
    const name = eq >= 0 ? a.slice(2, eq) : a.slice(2);
    const opt = byFlag.get(name);
    if (!opt) throw new ConfigError(`unknown flag --${name}`);
    if (eq >= 0) flags.set(name, a.slice(eq + 1));
    else if (opt.schema === bool && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'))) flags.set(name, 'true');
    else {
      const next = argv[++i];
      if (next === undefined) throw new ConfigError(`flag --${name} needs a value`);
      flags.set(name, next);
    }
  }
  const out: Record<string, unknown> = {};
  for (const [key, opt] of Object.entries(options)) {
    const fromFlag = flags.get(opt.flag);
    const raw = fromFlag ?? env[opt.env];
    if (raw === undefined || (fromFlag === undefined && raw === '')) {
      out[key] = opt.default;
      continue;
    }
    const r = v.safeParse(opt.schema as v.GenericSchema, raw);
    if (!r.success) {
      const where = fromFlag !== undefined ? `--${opt.flag}` : opt.env;
      // A secret's value is never repeated (the message goes to stderr and to logs).
      const shown = 'secret' in opt && opt.secret && raw !== '' ? '' : `${JSON.stringify(raw)}: `;
      throw new ConfigError(`invalid value for ${where}: ${shown}${r.issues[0]!.message}`);
    }
    out[key] = r.output;
  }
  const cfg = out as unknown as ServerConfig;
  for (const p of plugins) {
    const wrong = p.checkOptions?.(cfg);
    if (wrong) throw new ConfigError(wrong);
  }
  return cfg;
}

/** Defaults only (tests and embedders override what they need). */
export function defaultConfig(overrides: Partial<ServerConfig> = {}): ServerConfig {
  return { ...loadConfig([], {}), ...overrides };
}
