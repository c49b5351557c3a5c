import { describe, expect, it } from 'vitest';
import { narrowRows, rowsPlaceholder as p } from './narrow.js';

// Note [Narrow rows]: the projection of a rows subquery is the columns the statement reads.
describe('narrowRows', () => {
  it('projects the columns named on the alias, each once, not its own order keys', () => {
    const sql = `select json_agg(_t1 order by _t0."__svc_o0") from (select ${p('_t0')}, _t0."born" as "__svc_o0" from t as _t0 order by _t0."born" limit 5) as _t0 cross join lateral (select _t0."id" as "id", _t0."id" as "again") as _t1`;
    expect(narrowRows(sql)).toBe(sql.replace(p('_t0'), '_t0."born", _t0."id"'));
  });

  it('reads quoted names whole (a doubled quote inside), and nothing inside quotes or literals', () => {
    const sql = `select (select ${p('_t2')} from t as _t2 limit 1) as _t2, _t2."we""ird", 'it''s _t2."secret"' as "_t2.""x""", _t2."a"`;
    expect(narrowRows(sql)).toContain('select _t2."we""ird", _t2."a" from t as _t2');
  });

  it('keeps <t>.* where the alias is used whole, names no column, or is another alias', () => {
    const whole = `select to_json(_t0) from (select ${p('_t0')} from t as _t0 limit 1) as _t0`;
    expect(narrowRows(whole)).toBe(whole.replace(p('_t0'), '_t0.*'));
    const star = `select _t0.* from (select ${p('_t0')} from t as _t0 limit 1) as _t0 where _t0."id" = 1`;
    expect(narrowRows(star)).toBe(star.replace(p('_t0'), '_t0.*'));
    const none = `select count(*) from (select ${p('_t0')} from t as _t0 limit 1) as _t0`;
    expect(narrowRows(none)).toBe(none.replace(p('_t0'), '_t0.*'));
    // _t1 and _t10 are not _t1's columns' owners of each other.
    const two = `select _t10."x", _t1."y" from (select ${p('_t1')} from t as _t1 limit 1) as _t1, u as _t10`;
    expect(narrowRows(two)).toContain('select _t1."y" from t as _t1');
    // As ... AS in any case is the alias's definition, not a use.
    const upper = `select _t3."a" from (select ${p('_t3')} from t AS _t3 limit 1) As _t3`;
    expect(narrowRows(upper)).toContain('select _t3."a" from t AS _t3');
  });

  it('leaves a statement without placeholders as it is', () => {
    const sql = 'select 1 as "_t0", \'\u00e9\'';
    expect(narrowRows(sql)).toBe(sql);
  });
});
