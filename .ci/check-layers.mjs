#!/usr/bin/env node
/**
 * The layering of plugins/database (issue 22): a layer imports only the layers before it. The
 * imports are dpdm's (resolved, type imports included); the rules are here. Tests are exempt.
 *   primitives  model/scalars.ts   table names, column and scalar types
 *   ir          ir/                the query and mutation IR
 *   sql         sql/               the default SQL compiler over the IR, which SQL kinds extend
 *   contract    model/types.ts     what a source kind implements (its dialect compiles the IR)
 *   naming      model/naming.ts    GraphQL names of tables, columns, root fields, sources
 *   model       model/             the resolved model, the service, boolean expressions
 *   metadata    metadata/          the command groups and their build steps
 *   schema      schema/            the generated GraphQL schema and its plans
 *   data        data/              the legacy data operations (they run schema plans)
 * Exits 1 and names each import that goes against them.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const LAYERS = [
  ['primitives', /^plugins\/database\/model\/scalars\.ts$/],
  ['ir', /^plugins\/database\/ir\//],
  ['sql', /^plugins\/database\/sql\//],
  ['contract', /^plugins\/database\/model\/types\.ts$/],
  ['naming', /^plugins\/database\/model\/naming\.ts$/],
  ['model', /^plugins\/database\/model\//],
  ['metadata', /^plugins\/database\/metadata\//],
  ['schema', /^plugins\/database\/schema\//],
  ['data', /^plugins\/database\/data\//],
];
const layerOf = (file) => LAYERS.findIndex(([, re]) => re.test(file));

const dir = mkdtempSync(path.join(tmpdir(), 'layers-'));
const out = path.join(dir, 'deps.json');
try {
  execFileSync(process.execPath, ['node_modules/dpdm/lib/bin/dpdm.js', '--no-warning', '--no-tree', '--no-circular', '--output', out, 'plugins/database/**/*.ts'], { stdio: 'ignore' });
  const { tree } = JSON.parse(readFileSync(out, 'utf8'));
  const wrong = [];
  for (const [file, deps] of Object.entries(tree)) {
    if (file.endsWith('.test.ts')) continue;
    const from = layerOf(file);
    if (from < 0) continue;
    for (const d of deps ?? []) {
      const to = d.id ? layerOf(d.id) : -1;
      if (to > from) wrong.push(`${file} (${LAYERS[from][0]}) imports ${d.id} (${LAYERS[to][0]})`);
    }
  }
  if (wrong.length) {
    console.log(`plugins/database layering: ${wrong.length} import(s) against the layers (.ci/check-layers.mjs):\n  ${wrong.join('\n  ')}`);
    process.exit(1);
  }
  console.log('plugins/database layering: every import goes to an earlier layer');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
