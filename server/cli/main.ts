/**
 * The `svc` command line (docs/cli.md): a Hasura CLI project (config.yaml, metadata/ in the
 * directory format, migrations/, seeds/) applied to a running engine through its admin APIs.
 * `run` is the whole program with its arguments, environment and output passed in, so that the
 * tests run it in-process against a real server; svc.ts is the executable.
 */
import { Command, CommanderError, Option } from 'commander';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { ApiError, Client } from './client.js';
import { diffMetadata } from './diff.js';
import { startEmbedded, type Embedded } from './embedded-engine.js';
import { describeRenames, fromHasura } from './from-hasura.js';
import { withoutEmptySections, writeMetadataDir, type Loaded } from './metadata-dir.js';
import { applyMigrations, applySeeds, createMigration, hasuraSqlFilter, migrationStatus } from './migrate.js';
import { loadProjectMetadata, readProject, type ProjectConfig } from './project.js';
import { ProjectError, parseJsonPath, toYaml, type Origin } from './yaml-files.js';

export interface Io {
  out(line: string): void;
  err(line: string): void;
  env: Record<string, string | undefined>;
  cwd: string;
  /** When a long-running command (`svc console`) stops; by default at SIGINT or SIGTERM. */
  until?: Promise<unknown>;
}

interface Globals {
  embedded?: boolean;
  dataDir?: string;
  endpoint?: string;
  adminSecret?: string;
  dir: string;
  fromHasura?: boolean;
}

type Obj = Record<string, any>;

/** A failure already reported, with the exit code to give. */
class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

function positiveOrAll(name: string) {
  return (v: string) => {
    if (v === 'all') return 'all' as const;
    if (!/^\d+$/.test(v) || Number(v) === 0) throw new CommanderError(1, 'svc.invalidArgument', `--${name} takes a positive number or "all"`);
    return Number(v);
  };
}

export async function run(argv: string[], io: Io): Promise<number> {
  const program = new Command('svc');
  program
    .description('Create a Hasura CLI project, or apply one (metadata, migrations, seeds) to a Svc engine')
    .option('--endpoint <url>', 'the engine (env SVC_GRAPHQL_ENDPOINT, config.yaml endpoint; default http://localhost:8080)')
    .option('--admin-secret <secret>', 'the admin secret (env SVC_GRAPHQL_ADMIN_SECRET, config.yaml admin_secret)')
    .option('--dir <dir>', 'the project directory (with config.yaml, metadata/, migrations/, seeds/)', '.')
    .option('--embedded', 'start the engine in this process for the command (as `npm start` would: SVC_GRAPHQL_DATABASE_URL, or the embedded PostgreSQL on the data directory) instead of connecting to a running one')
    .option('--data-dir <dir>', 'with --embedded (implies it): the data directory of the embedded PostgreSQL (env SVC_GRAPHQL_DATA_DIR; default ./.svc-data)')
    .option('--from-hasura', 'read X-Hasura-* session variables, HASURA_GRAPHQL_* environment references and hasura_fields as X-Svc-*, SVC_GRAPHQL_* and svc_fields')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, '')), writeErr: (s) => io.err(s.replace(/\n$/, '')) });

  // Note [Which engine]: chosen before the command's action; the engine of --embedded (or of the
  // automatic fallback) is stopped after it (in the finally below). Commands that need no engine
  // (`migrate create`, `init`) start and probe nothing.
  let embedded: Embedded | undefined;
  let client: Client | undefined;
  program.hook('preAction', async (_program, action) => {
    const g = action.optsWithGlobals() as Globals;
    if ((action.name() === 'create' && action.parent?.name() === 'migrate') || action.name() === 'init') return;
    const project = readProject(resolve(io.cwd, g.dir));
    const hasura = g.fromHasura ? (k: string) => io.env[`HASURA_GRAPHQL_${k}`] : () => undefined;
    const secret = g.adminSecret ?? io.env.SVC_GRAPHQL_ADMIN_SECRET ?? hasura('ADMIN_SECRET') ?? project.adminSecret;
    const given = g.endpoint ?? io.env.SVC_GRAPHQL_ENDPOINT ?? hasura('ENDPOINT');
    const embed = async () => {
      const dataDir = g.dataDir ? resolve(io.cwd, g.dataDir) : io.env.SVC_GRAPHQL_DATA_DIR ? undefined : join(project.root, '.svc-data');
      embedded = await startEmbedded(io.env, dataDir, io.err);
      client = new Client(embedded.endpoint, embedded.adminSecret);
      return embedded;
    };
    if (g.embedded || g.dataDir) {
      await embed();
      return;
    }
    if (given !== undefined) {
      client = new Client(given, secret);
      return;
    }
    const endpoint = project.endpoint ?? `http://localhost:${io.env.SVC_GRAPHQL_SERVER_PORT ?? 8080}`;
    const from = project.endpoint ? `config.yaml's endpoint ${endpoint}` : endpoint;
    if (!isLoopback(endpoint) || (await answers(endpoint))) {
      io.err(`svc: using the engine at ${from}`);
      client = new Client(endpoint, secret);
      return;
    }
    const e = await embed();
    io.err(`svc: no engine answers at ${from}: started one embedded (${e.describe}) for this command`);
  });

  const ctx = (cmd: Command) => {
    const g = cmd.optsWithGlobals() as Globals;
    const project = readProject(resolve(io.cwd, g.dir));
    // (only the commands that need no engine run without one chosen: theirs is never called)
    return { g, project, client: client ?? new Client('http://localhost:8080') };
  };

  const loadDoc = (project: ProjectConfig, g: Globals, file?: string): Loaded & { doc: Obj } => {
    const loaded = loadProjectMetadata(project, file);
    let doc: Obj = loaded.doc;
    const r = fromHasura(doc, loaded.origins);
    if (g.fromHasura) {
      for (const line of describeRenames(r.renames)) io.out(line);
      doc = r.doc as Obj;
    } else if (r.renames.length) {
      // Sent as they are, Hasura's names mean nothing here (a filter on X-Hasura-User-Id
      // compares with that text): say so, once.
      const first = r.renames[0]!;
      const more = r.renames.length - 1;
      io.err(`note: the metadata uses Hasura's names (${first.from}${first.first ? ` at ${first.first}` : ''}${more ? ` and ${more} more` : ''}); --from-hasura reads them as this engine's`);
    }
    return { ...loaded, doc: withoutEmptySections(doc) };
  };

  // --- init -----------------------------------------------------------------------------------
  program
    .command('init <dir>')
    .description('create a project directory as `hasura init` does: config.yaml, metadata/ (version 3, every section empty), migrations/, seeds/')
    .action(async (dirArg: string, _o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals() as Globals;
      const dir = resolve(io.cwd, dirArg);
      if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length)) {
        throw new ProjectError(`${relative(io.cwd, dir) || '.'} exists already and is not an empty directory`);
      }
      mkdirSync(dir, { recursive: true });
      // The Hasura CLI's config v3 (its `actions` block is what its codegen reads; kept so that a
      // project made here also works with the Hasura CLI).
      const config: Obj = { version: 3, endpoint: g.endpoint ?? 'http://localhost:8080' };
      if (g.adminSecret) config.admin_secret = g.adminSecret;
      Object.assign(config, { metadata_directory: 'metadata', actions: { kind: 'synchronous', handler_webhook_baseurl: 'http://localhost:3000' } });
      writeFileSync(join(dir, 'config.yaml'), toYaml(config));
      // every file of the tree, empty, as `metadata export` writes an empty metadata
      const files = writeMetadataDir(join(dir, 'metadata'), { version: 3, sources: [] });
      for (const d of ['migrations', 'seeds']) mkdirSync(join(dir, d), { recursive: true });
      io.out(`created project ${relative(io.cwd, dir) || '.'}: config.yaml, metadata/ (${files.length} files), migrations/, seeds/`);
    });

  // --- metadata -------------------------------------------------------------------------------
  const metadata = program.command('metadata').description('export, apply, diff and reload the metadata');

  metadata
    .command('export')
    .description('write the engine\'s metadata into the project\'s metadata directory (the Hasura CLI\'s format v3)')
    .addOption(new Option('-o, --output <format>', 'print one document to stdout instead').choices(['json', 'yaml']))
    .action(async (o: { output?: 'json' | 'yaml' }, cmd: Command) => {
      const { project, client } = ctx(cmd);
      const r = await client.metadata('export_metadata', {}, 2);
      if (o.output === 'json') return io.out(JSON.stringify(r.metadata, null, 2));
      if (o.output === 'yaml') return io.out(toYaml(r.metadata).replace(/\n$/, ''));
      const dir = join(project.root, project.metadataDirectory);
      const files = writeMetadataDir(dir, r.metadata);
      io.out(`exported metadata (resource_version ${r.resource_version}) to ${relative(io.cwd, dir) || '.'}: ${files.length} files`);
    });

  metadata
    .command('apply')
    .description('replace the engine\'s metadata with the project\'s (a metadata directory, or one JSON/YAML file)')
    .option('--file <file>', 'a single metadata.json / metadata.yaml instead of the directory')
    .option('--allow-inconsistent-metadata', 'apply even when objects are inconsistent (they are listed)')
    .option('--dry-run', 'show what would change (metadata diff) and apply nothing')
    .action(async (o: { file?: string; allowInconsistentMetadata?: boolean; dryRun?: boolean }, cmd: Command) => {
      const { g, project, client } = ctx(cmd);
      const loaded = loadDoc(project, g, o.file && resolve(io.cwd, o.file));
      if (o.dryRun) {
        const current = await client.metadata('export_metadata', {}, 2);
        printDiff(diffMetadata(current.metadata, loaded.doc));
        return;
      }
      let r: Obj;
      try {
        r = await client.metadata('replace_metadata', { allow_inconsistent_metadata: !!o.allowInconsistentMetadata, metadata: loaded.doc }, 2);
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        reportApiError(e, loaded, '$.args.metadata');
        throw new Exit(1);
      }
      if (r.is_consistent === false) {
        io.err(`applied ${loaded.from}, with ${r.inconsistent_objects.length} inconsistent object(s):`);
        for (const line of describeInconsistencies(r.inconsistent_objects, loaded)) io.err(line);
        return;
      }
      io.out(`applied ${loaded.from}: metadata is consistent`);
    });

  metadata
    .command('diff')
    .description('show what `metadata apply` would change: the engine\'s metadata -> the project\'s')
    .option('--file <file>', 'a single metadata.json / metadata.yaml instead of the directory')
    .action(async (o: { file?: string }, cmd: Command) => {
      const { g, project, client } = ctx(cmd);
      const loaded = loadDoc(project, g, o.file && resolve(io.cwd, o.file));
      const current = await client.metadata('export_metadata', {}, 2);
      printDiff(diffMetadata(current.metadata, loaded.doc));
    });

  metadata
    .command('reload')
    .description('reload the metadata: re-read the databases\' schemas and rebuild')
    .action(async (_o: unknown, cmd: Command) => {
      const { client } = ctx(cmd);
      const r = await client.metadata('reload_metadata', {});
      io.out('metadata reloaded');
      if (r && r.is_consistent === false) {
        io.err(`the metadata is inconsistent (${r.inconsistent_objects?.length ?? '?'} object(s)): svc metadata inconsistency list`);
      }
    });

  const ic = metadata.command('inconsistency').alias('ic').description('the inconsistent objects of the metadata');
  ic.command('list')
    .description('list the inconsistent objects')
    .action(async (_o: unknown, cmd: Command) => {
      const { client } = ctx(cmd);
      const r = await client.metadata('get_inconsistent_metadata', {});
      if (r.is_consistent) return io.out('metadata is consistent');
      io.out(`${r.inconsistent_objects.length} inconsistent object(s):`);
      for (const line of describeInconsistencies(r.inconsistent_objects)) io.out(line);
      throw new Exit(2);
    });
  ic.command('drop')
    .description('remove the inconsistent objects from the metadata')
    .action(async (_o: unknown, cmd: Command) => {
      const { client } = ctx(cmd);
      await client.metadata('drop_inconsistent_metadata', {});
      io.out('inconsistent objects dropped');
    });

  // --- deploy ---------------------------------------------------------------------------------
  program
    .command('deploy')
    .description('apply the project as `hasura deploy` does: metadata apply, migrate apply (every database of migrations/), metadata reload; stops at the first failure; exit 2 when the metadata ends inconsistent')
    .option('--allow-inconsistent-metadata', 'exit 0 even when the metadata is inconsistent at the end (the objects are listed either way)')
    .option('--no-transaction', 'the migrations as with `migrate apply --no-transaction` (env SVC_GRAPHQL_NO_TRANSACTION=true)')
    .action(async (o: { allowInconsistentMetadata?: boolean; transaction: boolean }, cmd: Command) => {
      const { g, project, client } = ctx(cmd);
      const noTransaction = cmd.getOptionValueSource('transaction') === 'cli' ? !o.transaction : (envFlag('NO_TRANSACTION', g) ?? false);
      // Note [Deploy]: the metadata first, as Hasura's deploy does: the databases a migration runs
      // on are sources of the metadata. Objects that the migrations create are missing until they
      // ran, so this step accepts inconsistency; the reload after the migrations is what counts.
      const loaded = loadDoc(project, g);
      let applied: Obj;
      try {
        applied = await client.metadata('replace_metadata', { allow_inconsistent_metadata: true, metadata: loaded.doc }, 2);
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        reportApiError(e, loaded, '$.args.metadata');
        io.err('deploy: stopped at metadata apply (1/3): nothing was changed');
        throw new Exit(1);
      }
      const pending = applied.is_consistent === false ? applied.inconsistent_objects.length : 0;
      io.out(`deploy: 1/3 applied ${loaded.from}${pending ? ` (${pending} inconsistent object(s) until the migrations ran)` : ''}`);
      const base = join(project.root, project.migrationsDirectory);
      for (const db of subdirs(base)) {
        try {
          await applyMigrations(client, db, join(base, db), { noTransaction, filter: g.fromHasura ? hasuraSqlFilter(io.out) : undefined }, (l) => io.out(`deploy: 2/3 ${l}`), project.root);
        } catch (e) {
          io.err(`error: ${(e as Error).message}`);
          io.err('deploy: stopped at migrate apply (2/3): the metadata is applied, and the migrations before this one; the metadata was not reloaded');
          throw new Exit(1);
        }
      }
      if (!subdirs(base).length) io.out('deploy: 2/3 no migrations');
      const r = await client.metadata('reload_metadata', {});
      io.out('deploy: 3/3 metadata reloaded');
      if (r && r.is_consistent === false) {
        io.err(`the metadata is inconsistent: ${r.inconsistent_objects.length} object(s):`);
        for (const line of describeInconsistencies(r.inconsistent_objects, loaded)) io.err(line);
        if (!o.allowInconsistentMetadata) throw new Exit(2);
        return;
      }
      io.out('deploy: done, the metadata is consistent');
    });

  // --- console --------------------------------------------------------------------------------
  program
    .command('console')
    .description('serve the console against the engine; what is changed in it is written into the project (migrations/<db>/, the metadata directory), as `hasura console` does')
    .option('--console-port <port>', 'the port to serve it on', '9695')
    .option('--address <address>', 'the address to listen on', '127.0.0.1')
    .action(async (o: { consolePort: string; address: string }, cmd: Command) => {
      const { project, client } = ctx(cmd);
      if (!/^\d+$/.test(o.consolePort) || Number(o.consolePort) > 65535) throw new ProjectError(`--console-port: expected a port number, got "${o.consolePort}"`);
      // (Note [The console of a project] in console-server.ts; loaded here only, as the engine is)
      const { startConsoleServer } = await import('./console-server.js');
      let server;
      try {
        server = await startConsoleServer({ endpoint: client.endpoint, project, port: Number(o.consolePort), address: o.address, log: io.err });
      } catch (e) {
        throw new Error(`svc console: cannot listen on ${o.address}:${o.consolePort}: ${(e as Error).message}`);
      }
      io.out(`svc console: ${server.url}/console (the engine at ${client.endpoint}; migrations and metadata are written to ${project.root})`);
      try {
        await (io.until ?? new Promise((r) => (process.once('SIGINT', r), process.once('SIGTERM', r))));
      } finally {
        await server.close();
      }
    });

  // --- migrations and seeds -------------------------------------------------------------------
  const database = () => new Option('--database-name <name>', 'the database (source) of the project').default('default');
  const migrate = program.command('migrate').description('create, apply and list migrations (migrations/<db>/<version>_<name>/up.sql, down.sql)');

  migrate
    .command('create <name>')
    .description('create an empty migration, or one from an SQL file')
    .addOption(database())
    .option('--sql-from-file <file>', 'the up migration\'s SQL')
    .option('--up-sql <sql>', 'the up migration\'s SQL')
    .option('--down-sql <sql>', 'the down migration\'s SQL')
    .option('--version <version>', 'the version (default: now, in milliseconds, as the Hasura CLI does)')
    .action(async (name: string, o: { databaseName: string; sqlFromFile?: string; upSql?: string; downSql?: string; version?: string }, cmd: Command) => {
      const { project } = ctx(cmd);
      if (o.version !== undefined && !/^\d+$/.test(o.version)) throw new ProjectError('--version must be a number');
      const up = o.sqlFromFile ? readFileSync(resolve(io.cwd, o.sqlFromFile), 'utf8') : o.upSql ?? '';
      const dir = createMigration(join(project.root, project.migrationsDirectory, o.databaseName), name, up, o.downSql ?? '', o.version);
      io.out(`created migration ${relative(io.cwd, dir)}`);
    });

  migrate
    .command('apply')
    .description('apply the pending migrations (default), the next N, the last N down, or one version')
    .addOption(database())
    .option('--all-databases', 'every database with a folder in migrations/')
    .option('--up <n>', 'apply the next N pending migrations ("all": every one)', positiveOrAll('up'))
    .option('--down <n>', 'revert the last N applied migrations ("all": every one)', positiveOrAll('down'))
    .option('--version <version>', 'apply (or with --type down, revert) this migration only')
    .addOption(new Option('--type <direction>', 'with --version').choices(['up', 'down']).default('up'))
    .option('--skip-execution', 'record the migrations as applied (or not) without running their SQL')
    .option('--no-transaction', 'run each file as it is, statement by statement outside any transaction (CREATE INDEX CONCURRENTLY), and record it after: not atomic (env SVC_GRAPHQL_NO_TRANSACTION=true)')
    .action(async (o: { databaseName: string; allDatabases?: boolean; up?: number | 'all'; down?: number | 'all'; version?: string; type: 'up' | 'down'; skipExecution?: boolean; transaction: boolean }, cmd: Command) => {
      const { g, project, client } = ctx(cmd);
      if ([o.up, o.down, o.version].filter((x) => x !== undefined).length > 1) throw new ProjectError('give one of --up, --down and --version');
      // the flag, else its environment variable (read before anything runs: a bad value applies nothing)
      const noTransaction = cmd.getOptionValueSource('transaction') === 'cli' ? !o.transaction : (envFlag('NO_TRANSACTION', g) ?? false);
      const base = join(project.root, project.migrationsDirectory);
      for (const db of o.allDatabases ? subdirs(base) : [o.databaseName]) {
        await applyMigrations(client, db, join(base, db), { up: o.up, down: o.down, version: o.version, type: o.type, skipExecution: o.skipExecution, noTransaction, filter: g.fromHasura ? hasuraSqlFilter(io.out) : undefined }, io.out, project.root);
      }
    });

  migrate
    .command('status')
    .description('the migrations on disk and in the database')
    .addOption(database())
    .action(async (o: { databaseName: string }, cmd: Command) => {
      const { project, client } = ctx(cmd);
      const rows = await migrationStatus(client, o.databaseName, join(project.root, project.migrationsDirectory, o.databaseName));
      io.out(['VERSION', 'NAME', 'SOURCE STATUS', 'DATABASE STATUS'].join('\t'));
      for (const r of rows) io.out([r.version, r.name, r.onDisk ? 'Present' : 'Not Present', r.applied ? 'Present' : 'Not Present'].join('\t'));
    });

  const seed = program.command('seed').description('seed data (seeds/<db>/*.sql)');
  seed
    .command('apply')
    .description('run the seed files of a database, in file-name order, each in one transaction')
    .addOption(database())
    .option('--file <name...>', 'only these files of seeds/<db>/')
    .action(async (o: { databaseName: string; file?: string[] }, cmd: Command) => {
      const { g, project, client } = ctx(cmd);
      await applySeeds(client, o.databaseName, join(project.root, project.seedsDirectory, o.databaseName), o.file, io.out, project.root, g.fromHasura ? hasuraSqlFilter(io.out) : undefined);
    });

  /** A boolean flag's environment variable: SVC_GRAPHQL_<name>, with --from-hasura then
   * HASURA_GRAPHQL_<name> (as --endpoint and --admin-secret read theirs), in the words the
   * server's boolean options take; undefined when unset or empty. */
  function envFlag(name: string, g: Globals): boolean | undefined {
    for (const variable of [`SVC_GRAPHQL_${name}`, ...(g.fromHasura ? [`HASURA_GRAPHQL_${name}`] : [])]) {
      const raw = io.env[variable];
      if (raw === undefined || raw.trim() === '') continue;
      const x = raw.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(x)) return true;
      if (['false', '0', 'no', 'off'].includes(x)) return false;
      throw new ProjectError(`${variable}: expected a boolean (true or false), got "${raw}"`);
    }
    return undefined;
  }

  function printDiff(lines: string[]) {
    if (!lines.length) io.out('no differences');
    for (const l of lines) io.out(l);
  }

  /** An error of replace_metadata: its message, and the file and line its path points into. */
  function reportApiError(e: ApiError, loaded: Loaded, prefix: string) {
    const body = e.body ?? {};
    const at = typeof body.path === 'string' && body.path.startsWith(prefix) ? loaded.origins.locate(loaded.doc, parseJsonPath(body.path.slice(prefix.length))) : undefined;
    io.err(`${at ? `${at.file}:${at.line}: ` : ''}${body.error ?? e.message}${body.code ? ` (${body.code})` : ''}`);
    if (Array.isArray(body.internal) && body.internal.length) {
      io.err(`${body.internal.length} inconsistent object(s):`);
      for (const line of describeInconsistencies(body.internal, loaded)) io.err(line);
    }
  }

  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof Exit) return e.code;
    if (e instanceof CommanderError) {
      if (e.code === 'svc.invalidArgument') io.err(`error: ${e.message}`);
      return e.exitCode;
    }
    if (e instanceof ApiError) {
      io.err(`error: ${e.message}`);
      return 1;
    }
    io.err(`error: ${(e as Error).message}`);
    return 1;
  } finally {
    await embedded?.stop();
  }
}

/**
 * Note [Which engine]
 * The engine a command talks to: with --embedded or --data-dir, one started in this process; else
 * the endpoint given (--endpoint, SVC_GRAPHQL_ENDPOINT, with --from-hasura HASURA_GRAPHQL_ENDPOINT),
 * used as it is; else the default one, config.yaml's endpoint or http://localhost with the port a
 * server started from the same environment listens on (SVC_GRAPHQL_SERVER_PORT, 8080). A default
 * on this machine is tried first (any HTTP answer to /healthz counts): when nothing answers there,
 * the engine is started embedded, as with --embedded, on the project's data directory. Either way
 * the choice is said on stderr (stdout stays the command's: `metadata export -o json`). A remote
 * default that does not answer is an error: starting a local engine in its place would apply the
 * project to another database than the one meant.
 */
const isLoopback = (endpoint: string) => {
  try {
    return ['localhost', '127.0.0.1', '[::1]', '::1'].includes(new URL(endpoint).hostname);
  } catch {
    return false;
  }
};

async function answers(endpoint: string): Promise<boolean> {
  try {
    await fetch(`${endpoint.replace(/\/+$/, '')}/healthz`, { signal: AbortSignal.timeout(3000) });
    return true;
  } catch {
    return false;
  }
}

function subdirs(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((d) => statSync(join(dir, d)).isDirectory()).sort() : [];
}

/** An inconsistent object as a line, with the project file it came from when it can be found. */
function describeInconsistencies(objects: Obj[], loaded?: Loaded): string[] {
  return objects.map((o) => {
    const at = loaded ? findOrigin(loaded, o) : undefined;
    // the engine's names say what they are ("table gone in source default")
    const what = o.name ?? `${o.type ?? 'object'} ${typeof o.definition === 'object' ? JSON.stringify(o.definition) : String(o.definition)}`;
    return `  ${at ? `${at.file}:${at.line}: ` : ''}${what}: ${o.reason ?? o.message ?? ''}`.trimEnd();
  });
}

/**
 * Where an inconsistent object came from. The engine reports it by its definition (a permission's
 * `{source, table, role, permission}`, a relationship's `{source, table, name, using}`, a table's
 * name), not by a path: the source, the table, and the member of the table named by its role or
 * name are looked up in the loaded document; else a value equal to the definition.
 */
function findOrigin(loaded: Loaded, o: Obj): Origin | undefined {
  const def = o.definition;
  const doc = loaded.doc;
  const type = String(o.type ?? '');
  const sourceName = (def && typeof def === 'object' && typeof def.source === 'string' ? def.source : undefined) ?? /in source "?([^"\s]+)"?$/.exec(String(o.name ?? ''))?.[1];
  const sources = Array.isArray(doc.sources) ? (doc.sources as Obj[]) : [];
  const source = sources.find((s) => s?.name === sourceName) ?? (sources.length === 1 ? sources[0] : undefined);
  const tableName = type === 'table' ? def : def && typeof def === 'object' ? def.table : undefined;
  if (source && tableName !== undefined) {
    const table = ((source.tables ?? []) as Obj[]).find((t) => sameTable(t?.table, tableName));
    if (table) {
      let member: unknown;
      const perm = /^(select|insert|update|delete)_permission$/.exec(type);
      if (perm) member = ((table[`${perm[1]}_permissions`] ?? []) as Obj[]).find((p) => p?.role === def.role);
      else if (def && typeof def === 'object' && typeof def.name === 'string') {
        for (const key of ['object_relationships', 'array_relationships', 'remote_relationships', 'computed_fields', 'event_triggers']) {
          member ??= ((table[key] ?? []) as Obj[]).find((x) => x?.name === def.name);
        }
      }
      return loaded.origins.of(member) ?? loaded.origins.of(table);
    }
  }
  if (def === null || typeof def !== 'object') return loaded.origins.of(source);
  const want = canonical(def);
  let found: Origin | undefined;
  const walk = (v: unknown): void => {
    if (found || v === null || typeof v !== 'object') return;
    if (canonical(v) === want) {
      found = loaded.origins.of(v);
      if (found) return;
    }
    for (const x of Object.values(v)) walk(x);
  };
  walk(doc);
  return found ?? loaded.origins.of(source);
}

const qualified = (t: unknown) =>
  typeof t === 'string' ? `public.${t}` : t && typeof t === 'object' ? `${(t as Obj).schema ?? 'public'}.${(t as Obj).name}` : JSON.stringify(t);
const sameTable = (a: unknown, b: unknown) => qualified(a) === qualified(b);

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));
}
