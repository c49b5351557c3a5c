/**
 * A differential test of inherited roles' select permissions (issue 24): on generated rows and
 * randomly drawn parent permissions (filters and column sets), the rows and cells an inherited
 * role reads through GraphQL, and its aggregates, equal what SQL written here by hand from the
 * same draw says the union of its parents allows (a row where some parent's filter holds; a cell
 * where some parent that allows the column sees the row, else null). Nested roles too. Seeded, so
 * a failure replays.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom as rng, useServer } from '../../test/helpers.js';

const ROWS = 400;
// Deterministic rows: a, b in small ranges, c a short text, d sometimes null.
const SEED = `
create table gen (id int primary key, a int not null, b int not null, c text not null, d int);
insert into gen select i, (i * 37) % 20, (i * 11) % 5, chr(97 + (i * 7) % 6) || (i % 13)::text, case when i % 9 = 0 then null else (i * 53) % 100 end
  from generate_series(1, ${ROWS}) as i;
`;

const s = useServer(SEED);

type Filter = { exp: unknown; sql: string };
const COLUMNS = ['a', 'b', 'c', 'd'] as const;

/** A filter as a permission states it, and the same in SQL (the session's B is 2). */
function drawFilter(r: () => number): Filter {
  const k = Math.floor(r() * 20);
  switch (Math.floor(r() * 6)) {
    case 0:
      return { exp: { a: { _lt: k } }, sql: `a < ${k}` };
    case 1:
      return { exp: { b: { _eq: 'X-Svc-B' } }, sql: `b = 2` };
    case 2:
      return { exp: { _or: [{ c: { _like: 'b%' } }, { d: { _gt: k * 5 } }] }, sql: `(c like 'b%' or d > ${k * 5})` };
    case 3:
      return { exp: { d: { _is_null: true } }, sql: `d is null` };
    case 4:
      return { exp: { _and: [{ a: { _gte: k } }, { _not: { b: { _eq: 0 } } }] }, sql: `(a >= ${k} and not b = 0)` };
    default:
      return { exp: {}, sql: 'true' };
  }
}

interface Parent {
  role: string;
  filter: Filter;
  columns: string[];
}

function drawParents(r: () => number, n: number, prefix: string): Parent[] {
  return Array.from({ length: n }, (_, i) => {
    const columns = COLUMNS.filter(() => r() < 0.5);
    return { role: `${prefix}${i}`, filter: drawFilter(r), columns };
  });
}

/** What the union of `parents` shows, by hand: the rows, each column's cell or null. */
function expectedSql(parents: Parent[], columns: string[]): string {
  const cell = (c: string) => {
    const allowing = parents.filter((p) => p.columns.includes(c));
    return allowing.length === parents.length ? c : `case when ${allowing.map((p) => `(${p.filter.sql})`).join(' or ') || 'false'} then ${c} end`;
  };
  return `select id${columns.map((c) => `, ${cell(c)} as ${c}`).join('')} from gen where ${parents.map((p) => `(${p.filter.sql})`).join(' or ')} order by id`;
}

describe('inherited roles against SQL of our own', () => {
  it('shows exactly the union of the parents, rows and cells, over random draws', async () => {
    const track = await s.metadata({ type: 'pg_track_table', args: { table: 'gen' } });
    expect(track.status, track.text).toBe(200);
    // Cells of non-null columns that came back null: the draws did exercise the nulling.
    let hidden = 0;
    for (let round = 0; round < 6; round++) {
      const r = rng(1000 + round);
      const parents = drawParents(r, 2 + Math.floor(r() * 3), `r${round}p`);
      const extra = drawParents(r, 1, `r${round}x`)[0]!;
      const all = [...parents, extra];
      const role = `r${round}_ir`;
      const nested = `r${round}_nested`;
      const setup = await s.metadata({
        type: 'bulk',
        args: [
          ...all.map((p) => ({
            type: 'pg_create_select_permission',
            args: { table: 'gen', role: p.role, permission: { columns: ['id', ...p.columns], filter: p.filter.exp, allow_aggregations: true } },
          })),
          { type: 'add_inherited_role', args: { role_name: role, role_set: parents.map((p) => p.role) } },
          { type: 'add_inherited_role', args: { role_name: nested, role_set: [role, extra.role] } },
        ],
      });
      expect(setup.status, setup.text).toBe(200);

      for (const [name, ps] of [
        [role, parents],
        [nested, all],
      ] as const) {
        const columns = COLUMNS.filter((c) => ps.some((p) => p.columns.includes(c)));
        const want = await s.sql.unsafe(expectedSql([...ps], columns));
        const got = await s.gql(`{ gen(order_by: {id: asc}) { id ${columns.join(' ')} } }`, undefined, { 'x-svc-role': name, 'x-svc-b': '2' });
        expect(got.errors, JSON.stringify(got.errors)).toBeUndefined();
        expect(got.data.gen, `round ${round}, role ${name}`).toEqual(want.map((row) => ({ ...row })));
        hidden += want.filter((x) => ['a', 'b', 'c'].some((c) => c in x && x[c] === null)).length;
        // Aggregates over what the role sees: the count of rows, and sum/max of each numeric cell.
        const numeric = columns.filter((c) => c !== 'c');
        if (numeric.length) {
          const agg = await s.gql(`{ gen_aggregate { aggregate { count sum { ${numeric.join(' ')} } max { ${numeric.join(' ')} } } } }`, undefined, {
            'x-svc-role': name,
            'x-svc-b': '2',
          });
          expect(agg.errors, JSON.stringify(agg.errors)).toBeUndefined();
          const sum = (c: string) => {
            const vals = want.map((x) => x[c]).filter((x) => x !== null) as number[];
            return vals.length ? vals.reduce((a, b) => a + b, 0) : null;
          };
          const max = (c: string) => {
            const vals = want.map((x) => x[c]).filter((x) => x !== null) as number[];
            return vals.length ? Math.max(...vals) : null;
          };
          expect(agg.data.gen_aggregate.aggregate, `round ${round}, role ${name}`).toEqual({
            count: want.length,
            sum: Object.fromEntries(numeric.map((c) => [c, sum(c)])),
            max: Object.fromEntries(numeric.map((c) => [c, max(c)])),
          });
        }
      }
      const drop = await s.metadata({
        type: 'bulk',
        args: [
          { type: 'drop_inherited_role', args: { role_name: nested } },
          { type: 'drop_inherited_role', args: { role_name: role } },
          ...all.map((p) => ({ type: 'pg_drop_select_permission', args: { table: 'gen', role: p.role } })),
        ],
      });
      expect(drop.status, drop.text).toBe(200);
    }
    expect(hidden).toBeGreaterThan(0);
  });
});
