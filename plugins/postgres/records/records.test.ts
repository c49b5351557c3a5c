/**
 * A root list is asked as PostgreSQL's text of its records and written as JSON in Node (Note
 * [Lists as records] in ./records.ts); an aggregate's `nodes` are still JSON that PostgreSQL
 * writes. The two must give the same data for every kind of value and every kind of field: each
 * selection below is asked both ways over the same rows and the answers compared, and a few
 * values are checked as literals. The writer alone is checked on texts record_out can write,
 * and on texts it cannot (which are a bug, reported, never half-written).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { useServer } from '../../../test/helpers.js';
import { answerWritten } from '../../../core/schema/contract.js';
import { answerBuffers, recordsWriter, type RecordRow } from './records.js';
import { OFFLOAD_MIN, recordsPoolCounts, setRecordsWorkers, stopRecordsWorkers } from './records-pool.js';
import { readBuffers } from '../connection/pg-socket.js';

const SEED = `
create type mood as enum ('ok', 'meh');
create domain short_text as text check (length(value) < 100);
create type pair as (a int, b text);
create table box (id int primary key, label text);
create table val (
  id int primary key, box_id int references box(id),
  i2 smallint, i4 int, i8 bigint, f4 real, f8 float8, n numeric, b bool, t text, vc varchar(20), bc char(4), nm name,
  ts timestamp, tz timestamptz, d date, tm time, ttz timetz, iv interval, u uuid, m money, by bytea, ip inet,
  j jsonb, js json, arr int[], tarr text[], e mood, dom short_text, pr pair
);
create table note (id int primary key, val_id int references val(id), body text);
insert into box values (1, 'one'), (2, 'two "quoted"'), (3, null);
insert into val values
  (1, 1, 1, 10, 9007199254740993, 1.5, 'NaN', 'NaN', true, 'say "hi", (ok)', 'a', 'ab', 'nm',
   '2024-01-05 10:00:00.123456', '2024-01-05 10:00+02', '2024-01-05', '10:00:01', '10:00:01+03', '1 day 2 hours', '00000000-0000-0000-0000-000000000001', 12.5, '\\x00ff', '10.0.0.1/8',
   '{"k": [1, "x"], "q": "a\\"b"}', '{ "spaced" :  [1,2] }', '{1,2}', '{"a,b","c\\"d",null}', 'ok', 'dom', '(1,"x y")'),
  (2, 1, 1, 20, -3, -0.25, 'Infinity', 'Infinity', false, E'back\\\\slash\\nnew\\tline\\x01\\r\\f\\b end', '', '', '',
   '2024-01-20 23:30:00', '2024-01-20 23:30+00', '2024-01-20', '23:59:59.5', '00:00+00', '-3 seconds', '00000000-0000-0000-0000-000000000002', 0, '', '::1',
   '"s"', 'null', '{}', '{}', 'meh', '', '(,)'),
  (3, 2, 2, 30, 0, 1e30, '-Infinity', '-Infinity', null, 'ünï©ødé 😀 </script> \\u0000', null, null, null,
   null, null, null, null, null, null, null, null, null, null, 'null', null, null, null, null, null, null),
  (4, null, 2, null, null, null, 1e300, 123456789.123456789, true, '', 'c', 'abcd', 'x',
   '0044-03-15 00:00:00 BC', 'infinity', 'infinity', '00:00', '12:00-05:30', '0', null, -1.25, '\\x', '0.0.0.0',
   '[]', '[]', '{null,3}', '{""}', null, null, '(2,)'),
  (5, 3, null, 50, 7, 3.25, '-0', 0.1, false, null, 'a', null, null,
   '2024-02-01 08:00:00', '-infinity', '2024-02-01', null, null, null, null, null, null, null, '{}', '{}', null, null, null, null, null),
  (6, 2, 3, 60, 8, 2, 2.5e-10, -42, true, ' lead and trail ', 'a', null, null,
   '2024-02-01 08:00:00', '2024-02-01 08:00+05:30', '2024-02-01', '12:00', null, '1 mon', null, 1, null, null, '1.5', '1.5', '{4}', null, null, null, null);
insert into note values (1, 1, 'first'), (2, 1, 'second, "quoted"'), (3, 3, null), (4, 6, '');
create function val_label(v val) returns text language sql stable as $$ select v.t || '!' $$;
create function val_notes(v val) returns setof note language sql stable as $$ select * from note where val_id = v.id $$;
create function val_day(v val) returns date language sql stable as $$ select v.d $$;
`;

/** The writer's UTF-8 bytes as text (Note [Answers as bytes] in core/schema/contract.ts). */
const utf8 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8');

/** The answer of a text short enough to be written at once, as text. */
function written(out: Uint8Array | Promise<Uint8Array>): string {
  if (out instanceof Promise) throw new Error('a short text is written at once');
  return utf8(out);
}

const SCALARS = 'i2 i4 i8 f4 f8 n b t vc bc nm ts tz d tm ttz iv u m by ip j js arr tarr e dom pr';

function track(server: ReturnType<typeof useServer>) {
  beforeAll(async () => {
    const r = await server.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'box' } },
        { type: 'pg_track_table', args: { table: 'val' } },
        { type: 'pg_track_table', args: { table: 'note' } },
        { type: 'pg_create_object_relationship', args: { table: 'val', name: 'box', using: { foreign_key_constraint_on: 'box_id' } } },
        { type: 'pg_create_array_relationship', args: { table: 'box', name: 'vals', using: { foreign_key_constraint_on: { table: 'val', column: 'box_id' } } } },
        { type: 'pg_create_array_relationship', args: { table: 'val', name: 'notes', using: { foreign_key_constraint_on: { table: 'note', column: 'val_id' } } } },
        { type: 'pg_create_object_relationship', args: { table: 'note', name: 'val', using: { foreign_key_constraint_on: 'val_id' } } },
        { type: 'pg_add_computed_field', args: { table: 'val', name: 'label', definition: { function: 'val_label' } } },
        { type: 'pg_add_computed_field', args: { table: 'val', name: 'my_notes', definition: { function: 'val_notes' } } },
        { type: 'pg_add_computed_field', args: { table: 'val', name: 'day', definition: { function: 'val_day' } } },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  });
}

/** The list and the aggregate's nodes (JSON written by PostgreSQL) for the same selection. */
async function both(server: ReturnType<typeof useServer>, table: string, args: string, selection: string) {
  const a = args ? `(${args})` : '';
  const r = await server.gql(`{ list: ${table}${a} ${selection} agg: ${table}_aggregate${a} { nodes ${selection} } }`);
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return { list: r.data.list, nodes: r.data.agg.nodes };
}

describe('lists as records', () => {
  const server = useServer(SEED);
  track(server);

  it('every column type answers what PostgreSQL\'s JSON answers, ordered and not', async () => {
    for (const args of ['order_by: {id: asc}', 'order_by: {id: desc}, limit: 4, offset: 1', 'where: {id: {_in: [1, 2, 3]}}']) {
      const { list, nodes } = await both(server, 'val', args, `{ __typename id ${SCALARS} }`);
      expect(list, args).toEqual(nodes);
      expect(list.length, args).toBeGreaterThan(2);
    }
    // One column at a time too: a record of one column.
    for (const c of SCALARS.split(' ')) {
      const { list, nodes } = await both(server, 'val', 'order_by: {id: asc}', `{ ${c} }`);
      expect(list, c).toEqual(nodes);
    }
  });

  it('a few values as literals: strings escaped, NaN and the infinities as strings, nulls', async () => {
    const r = await server.request('POST', '/v1/graphql', { query: '{ val(order_by: {id: asc}) { id f8 b t bc by } }' });
    expect(r.status).toBe(200);
    expect(r.text).toContain('"f8":"NaN"');
    expect(r.text).toContain('"f8":"-Infinity"');
    expect(r.text).toContain('"t":"back\\\\slash\\nnew\\tline\\u0001\\r\\f\\b end"');
    expect(r.text).toContain('"t":"say \\"hi\\", (ok)"');
    expect(r.text).toContain('"t":"ünï©ødé 😀 </script> \\\\u0000"');
    expect(r.text).toContain('"t":" lead and trail "');
    expect(r.text).toContain('"b":null');
    const rows = r.body.data.val;
    expect(rows.map((v: { t: unknown }) => v.t)).toEqual(['say "hi", (ok)', 'back\\slash\nnew\tline\u0001\r\f\b end', 'ünï©ødé 😀 </script> \\u0000', '', null, ' lead and trail ']);
    expect(rows[1].bc).toBe('    ');
    expect(rows[3].by).toBe('\\x');
  });

  it('object and array relationships, nested, with and without order, empty and null', async () => {
    const selections = [
      // Object relationships joined (the list has an order) and read by subquery (it has none).
      `{ id box { __typename id label } }`,
      `{ id box { label vals(order_by: {id: desc}) { id t box { id } } } }`,
      `{ id notes { id body val { id i8 box { label } } } }`,
      `{ id notes(order_by: {id: desc}, limit: 1) { body } notes_aggregate { aggregate { count } nodes { id } } }`,
      `{ id label my_notes { id body } my_notes_b: my_notes(where: {body: {_is_null: false}}) { body } day }`,
      `{ id j_k: j(path: "k") js_0: j(path: "$.k[1]") }`,
      // Lists first, back to back, inside an inline object between its fields, and before a field.
      `{ notes(order_by: {id: asc}) { id } box { vals(order_by: {id: asc}) { id } label vals_b: vals(order_by: {id: desc}) { t } id } id }`,
    ];
    for (const sel of selections) {
      for (const args of ['order_by: {id: asc}', '']) {
        const { list, nodes } = await both(server, 'val', args, sel);
        expect(list, `${args} ${sel}`).toEqual(nodes);
      }
    }
    const { list, nodes } = await both(server, 'box', 'order_by: {id: asc}', '{ id label vals(order_by: {id: asc}) { id t notes(order_by: {id: asc}) { body } box { label } } }');
    expect(list).toEqual(nodes);
    // A box with no vals has an empty list; a val with no box has a null object.
    expect(list.find((b: { id: number }) => b.id === 3).vals).toEqual([{ id: 5, t: null, notes: [], box: { label: null } }]);
    const vals = (await server.gql('{ val(order_by: {id: asc}) { id box { id } notes { id } } }')).data.val;
    expect(vals[3]).toEqual({ id: 4, box: null, notes: [] });
  });

  it('keys a row cannot carry (over 63 bytes) leave that object JSON, inside the records or instead of them', async () => {
    const long = `k${'x'.repeat(70)}`;
    for (const sel of [`{ id ${long}: t }`, `{ id box { ${long}: label } notes { ${long}: body } }`, `{ id box { label } notes(order_by: {id: asc}) { id val { ${long}: id } } }`]) {
      for (const args of ['order_by: {id: asc}', '']) {
        const { list, nodes } = await both(server, 'val', args, sel);
        expect(list, `${args} ${sel}`).toEqual(nodes);
      }
    }
    const r = await server.gql(`{ val(order_by: {id: asc}, limit: 1) { id box { ${long}: label } } }`);
    expect(r.data.val).toEqual([{ id: 1, box: { [long]: 'one' } }]);
  });

  it('an empty list is [], and an answer with no rows at all', async () => {
    const r = await server.gql('{ val(where: {id: {_eq: 100}}) { id } box(where: {id: {_eq: 1}}) { vals(where: {id: {_eq: 100}}) { id } } }');
    expect(r).toEqual({ data: { val: [], box: [{ vals: [] }] } });
  });

  it('an answer whose lists came as bytes: fields in order beside text ones, the same in a batch and a REST endpoint', async () => {
    // Lists (bytes, Note [Answers as bytes]) around an aggregate, a by-pk field and __typename
    // (text), with characters of one to four bytes.
    const query = '{ a: val(order_by: {id: asc}, where: {id: {_in: [1, 3]}}) { id t } n: val_aggregate { aggregate { count } } __typename one: val_by_pk(id: 3) { t } b: box(order_by: {id: asc}) { label } }';
    const r = await server.request('POST', '/v1/graphql', { query });
    expect(r.status).toBe(200);
    expect(r.text).toBe(
      '{"data":{"a":[{"id":1,"t":"say \\"hi\\", (ok)"},{"id":3,"t":"ünï©ødé 😀 </script> \\\\u0000"}],"n":{"aggregate" : {"count" : 6}},"__typename":"query_root",' +
        '"one":{"t":"ünï©ødé 😀 </script> \\\\u0000"},"b":[{"label":"one"},{"label":"two \\"quoted\\""},{"label":null}]}}',
    );
    // Decoded where a text is needed: a batch, a saved document (REST).
    const batch = await server.request('POST', '/v1/graphql', [{ query }, { query: '{ b: box(limit: 1, order_by: {id: asc}) { id } }' }]);
    expect(batch.text).toBe(`[${r.text},{"data":{"b":[{"id":1}]}}]`);
    await server.metadata({ type: 'create_query_collection', args: { name: 'bytes', definition: { queries: [{ name: 'q', query }] } } });
    await server.metadata({ type: 'create_rest_endpoint', args: { name: 'bytes', url: 'bytes', methods: ['GET'], definition: { query: { collection_name: 'bytes', query_name: 'q' } } } });
    const rest = await server.request('GET', '/api/rest/bytes');
    expect(rest.status, rest.text).toBe(200);
    expect(rest.body).toEqual(JSON.parse(r.text).data);
  });

  it('the explain API shows the records and how they are written', async () => {
    const r = await server.request('POST', '/v1/graphql/explain', { query: { query: '{ val(order_by: {id: asc}, where: {id: {_lte: 2}}) { id t box { label } notes { body } } }' } });
    expect(r.status, r.text).toBe(200);
    const [f] = r.body;
    expect(f.sql).toMatch(/^select string_agg\(/);
    expect(f.records).toEqual({
      keys: ['id', 't', 'box', 'notes'],
      cols: ['int', 'string', { k: 'inline', row: { keys: ['label'], cols: ['string'] } }, { k: 'list', row: { keys: ['body'], cols: ['string'] } }],
    });
    const [[text]] = (await server.sql.unsafe(f.sql, f.params).raw()) as unknown as [[Uint8Array]];
    expect(JSON.parse(utf8(await recordsWriter(f.records)(text)))).toEqual((await server.gql('{ val(order_by: {id: asc}, where: {id: {_lte: 2}}) { id t box { label } notes { body } } }')).data.val);
  });
});

describe('lists as records with stringified numbers', () => {
  const server = useServer(SEED, { config: { stringifyNumericTypes: true } });
  track(server);

  it('big numbers are strings, as in PostgreSQL\'s JSON', async () => {
    const { list, nodes } = await both(server, 'val', 'order_by: {id: asc}', `{ id ${SCALARS} box { id } }`);
    expect(list).toEqual(nodes);
    expect(list[0].i8).toBe('9007199254740993');
    expect(list[0].n).toBe('NaN');
  });
});

describe('the records writer', () => {
  // Every list on this thread (Note [Records written off the main thread]): what the workers
  // write is checked against it below.
  beforeAll(() => setRecordsWorkers(0));
  afterAll(() => setRecordsWorkers(undefined));
  const row: RecordRow = {
    keys: ['i', 'n', 'b', 's', 'j', 'o', 'l'],
    cols: ['int', 'number', 'bool', 'string', 'json', { k: 'object', row: { keys: ['x', 'y'], cols: ['string', 'int'] } }, { k: 'list', row: { keys: ['z'], cols: ['string'] } }],
  };
  const write = (text: string | null): string => {
    return written(recordsWriter(row)(text === null ? null : Buffer.from(text)));
  };

  it('writes what record_out writes', () => {
    expect(write(null)).toBe('[]');
    expect(write('')).toBe('[]');
    expect(JSON.parse(write('(1,2.5,t,abc,"{""a"": 1}","(""q """"r"""""",3)")[(x)("y, z")()](,,,,,)[]'))).toEqual([
      { i: 1, n: 2.5, b: true, s: 'abc', j: { a: 1 }, o: { x: 'q "r"', y: 3 }, l: [{ z: 'x' }, { z: 'y, z' }, { z: null }] },
      { i: null, n: null, b: null, s: null, j: null, o: null, l: [] },
    ]);
    expect(write('(-1,NaN,f,"",null,"(,)")[]')).toBe('[{"i":-1,"n":"NaN","b":false,"s":"","j":null,"o":{"x":null,"y":null},"l":[]}]');
    expect(JSON.parse(write('(0,-Infinity,f,"a\\\\b\\"c",1,)[]'))[0]).toMatchObject({ n: '-Infinity', s: 'a\\b"c', j: 1 });
    // Bytes other than the quoting ones are as they came, control characters escaped.
    expect(write('(0,1e+300,t,\u0001é😀,[],)[]')).toBe('[{"i":0,"n":1e+300,"b":true,"s":"\\u0001é😀","j":[],"o":null,"l":[]}]');
  });

  it('writes a text of more than a slice between turns of the event loop, the same JSON', async () => {
    const one = '(7,0.5,t,"a \\\\b ""c""",{},"(x,1)")[(y)(z)]';
    const n = 150_000;
    const text = Buffer.from(one.repeat(n));
    expect(text.length).toBeGreaterThan(5 << 20);
    // Other work gets turns while it is written.
    let turns = 0;
    const other = () => {
      turns++;
      if (!done) setImmediate(other);
    };
    let done = false;
    setImmediate(other);
    const answer = recordsWriter(row)(text);
    expect(answer).toBeInstanceOf(Promise);
    const json = utf8(await answer);
    done = true;
    expect(turns).toBeGreaterThanOrEqual(4);
    expect(json).toBe(`[${Array(n).fill(write(one).slice(1, -1)).join(',')}]`);
    expect(JSON.parse(json)[n - 1]).toEqual({ i: 7, n: 0.5, b: true, s: 'a \\b "c"', j: {}, o: { x: 'x', y: 1 }, l: [{ z: 'y' }, { z: 'z' }] });
  });

  it('writes an object inline after whether it has a row, nested inline objects too', () => {
    const inline: RecordRow = {
      keys: ['a', 'o', 'z'],
      cols: ['int', { k: 'inline', row: { keys: ['x', 'p'], cols: ['string', { k: 'inline', row: { keys: ['y'], cols: ['int'] } }] } }, 'string'],
    };
    const out = written(recordsWriter(inline)(Buffer.from('(1,t,"a b",t,2,z)(2,f,,f,,)(3,t,,f,,"")(4,,"x",t,5,)')));
    expect(out).toBe('[{"a":1,"o":{"x":"a b","p":{"y":2}},"z":"z"},{"a":2,"o":null,"z":null},{"a":3,"o":{"x":null,"p":null},"z":""},{"a":4,"o":null,"z":null}]');
    expect(() => recordsWriter(inline)(Buffer.from('(1,f,,f,)'))).toThrow();
  });

  it('writes the lists after the record of the fields before them, the fields after in a record again', () => {
    const lists: RecordRow = {
      keys: ['a', 'l1', 'l2', 'o', 'z'],
      cols: [
        'int',
        { k: 'list', row: { keys: ['z'], cols: ['string'] } },
        { k: 'list', row: { keys: ['z'], cols: ['string'] } },
        { k: 'inline', row: { keys: ['x', 'm'], cols: ['string', { k: 'list', row: { keys: ['z'], cols: ['string'] } }] } },
        'string',
      ],
    };
    const w = (text: string) => written(recordsWriter(lists)(Buffer.from(text)));
    // An object with no row reads its lists (empty or not) and writes null.
    expect(w('(1)[(a)][](t,x)[(b)("c d")](end)(2)[][](f,)[](zz)(3)[][(q)](f,)[(c)]()')).toBe(
      '[{"a":1,"l1":[{"z":"a"}],"l2":[],"o":{"x":"x","m":[{"z":"b"},{"z":"c d"}]},"z":"end"},' +
        '{"a":2,"l1":[],"l2":[],"o":null,"z":"zz"},{"a":3,"l1":[],"l2":[{"z":"q"}],"o":null,"z":null}]',
    );
    const first: RecordRow = { keys: ['l', 'a'], cols: [{ k: 'list', row: { keys: ['n', 'm'], cols: ['int', { k: 'list', row: { keys: ['m'], cols: ['int'] } }] } }, 'int'] };
    expect(written(recordsWriter(first)(Buffer.from('[(1)[(2)(3)](4)[]](5)[](6)')))).toBe('[{"l":[{"n":1,"m":[{"m":2},{"m":3}]},{"n":4,"m":[]}],"a":5},{"l":[],"a":6}]');
    for (const bad of ['(1)[(a)][](t,x)[(b)]', '(1)[(a)', '(1)[(a)][](t,x)[(b)](end', '(1,[(a)][](t,x)[](e)', '(1)[(a)](t,x)[](e)', '(1)[(a)][]x(t,x)[](e)']) {
      expect(() => w(bad), bad).toThrow();
    }
  });

  it('writes any key as its JSON (Note [A writer generated per plan]: keys reach the generated code as byte values only)', () => {
    const keys = ['a"b', 'back\\slash', 'é😀', "'); throw new Error('injected'); ('", '${globalThis.x = 1}', '*/ }', 'line\nbreak', ''];
    const row: RecordRow = { keys, cols: keys.map(() => 'int' as const) };
    const out = written(recordsWriter(row)(Buffer.from(`(${keys.map((_, i) => i).join(',')})`)));
    expect(JSON.parse(out)).toEqual([Object.fromEntries(keys.map((k, i) => [k, i]))]);
    expect((globalThis as { x?: unknown }).x).toBeUndefined();
  });

  it('writes a field as it reads it, its buffer grown wherever the field crosses its end', async () => {
    // record_out's quoting: `"` and `\` doubled inside quotes.
    const quoted = (s: string) => `"${s.replace(/["\\]/g, '$&$&')}"`;
    const controls = '\u0001'.repeat(100);
    // Runs of bytes copied as they are (Note [Fields read in runs]), unquoted and quoted, long
    // enough to cross the buffer's end at every shift.
    const plain = 'w'.repeat(200);
    const json = JSON.stringify({ k: `${'\\'.repeat(50)}"(, )"${'x'.repeat(200)}` });
    // An integer's and a json number's digits, unquoted.
    const digits = `2${'0'.repeat(300)}`;
    const pair = `(1,2,t,${controls}${plain},${quoted(json)},)[](${digits},3,f,${quoted(`${controls} ${plain} "x" \\`)},${digits},)[]`;
    const pairRows = [
      { i: 1, n: 2, b: true, s: `${controls}${plain}`, j: JSON.parse(json), o: null, l: [] },
      { i: 2e300, n: 3, b: false, s: `${controls} ${plain} "x" \\`, j: 2e300, o: null, l: [] },
    ];
    // More than a slice (written in slices, into a buffer made about the text's size, never the
    // last answer's), whose JSON is about twice its text: the buffer grows, and a leading string
    // of each length moves where, through every kind of field of a pair's JSON (about 2.4 KB; each
    // character of the lead takes 6 bytes of JSON and 1.125 of the buffer made).
    const n = Math.ceil((1.1 * (1 << 20)) / pair.length);
    const expectedLength = write(`(0,0,t,,0,)[]${pair}`).length - 4 + 2 + (n - 1) * (write(pair).length - 1);
    for (let shift = 0; shift < 520; shift += 10) {
      const lead = '\u0002'.repeat(shift + 1);
      const out = recordsWriter(row)(Buffer.from(`(0,0,t,${lead},0,)[]${pair.repeat(n)}`));
      expect(out).toBeInstanceOf(Promise);
      const text = utf8(await out);
      expect(text.length, `shift ${shift}`).toBe(expectedLength + 6 * lead.length);
      expect(JSON.parse(text), `shift ${shift}`).toEqual([{ i: 0, n: 0, b: true, s: lead, j: 0, o: null, l: [] }, ...Array.from({ length: n }, () => pairRows).flat()]);
    }
    // A boolean that is not `t` or `f`, and a quoted field cut after a backslash.
    for (const bad of ['(1,2,x,a,b,,)[]', '(1,2,tt,a,b,,)[]', '(1,2,t,"a\\', '(1,2,t,a,"[\\']) expect(() => write(bad), bad).toThrow();
  });

  it('lends each answer, written into again only after it is given back, once (Note [Lent answer bytes])', async () => {
    const w = recordsWriter(row);
    const bytes = (text: string) => w(Buffer.from(text)) as Uint8Array;
    // Where the bytes are (a small buffer is a slice of Node's shared pool).
    const same = (a: Uint8Array, b: Uint8Array) => a.buffer === b.buffer && a.byteOffset === b.byteOffset;
    const first = bytes('(1,2.5,t,"a longer string",1,"(x,3)")[(y)(z)]');
    const firstJson = utf8(first);
    // Not given back: later answers are written elsewhere, the first stays as it was.
    const second = bytes('(2,0,f,"",2,)[]');
    expect(same(second, first)).toBe(false);
    expect(utf8(first)).toBe(firstJson);
    // Given back (a second time does nothing): the next answer is written into its buffer.
    const { reused, givenBack } = answerBuffers;
    answerWritten(first);
    answerWritten(first);
    expect(answerBuffers.givenBack).toBe(givenBack + 1);
    const third = bytes('(3,1,t,c,3,)[]');
    expect(same(third, first)).toBe(true);
    expect(answerBuffers.reused).toBe(reused + 1);
    expect(utf8(third)).toBe('[{"i":3,"n":1,"b":true,"s":"c","j":3,"o":null,"l":[]}]');
    expect(same(bytes('(4,1,t,c,4,)[]'), third)).toBe(false);
    // A text written in slices lends its answer too; a string and bytes never lent are left be.
    const long = w(Buffer.from('(7,0.5,t,x,{},)[]'.repeat(70_000)));
    expect(long).toBeInstanceOf(Promise);
    const sliced = await long;
    answerWritten(sliced);
    expect(answerBuffers.givenBack).toBe(givenBack + 2);
    answerWritten('[]');
    answerWritten(Buffer.from('[]'));
    expect(answerBuffers.givenBack).toBe(givenBack + 2);
  });

  it('refuses a text that is not the plan\'s records', () => {
    for (const bad of ['(1,2,t,a,b,,', '1,2,t,a,b,,)', '(1,2,t,a,b,,)x', '(1,2,t,"a,b,,)', '(1,2,t,a,b,"(x,1,9)",)', '(1,2,t,a,b)']) {
      expect(() => write(bad), bad).toThrow();
    }
  });
});

describe('records written by worker threads (Note [Records written off the main thread])', () => {
  const row: RecordRow = {
    keys: ['i', 's', 'o', 'l'],
    cols: ['int', 'string', { k: 'inline', row: { keys: ['x'], cols: ['string'] } }, { k: 'list', row: { keys: ['z'], cols: ['string'] } }],
  };
  const one = (i: number) => `(${i},"a ""${i}"" \\\\ b",t,x${i})[(y)("z, ${i}")]`;
  const text = (n: number, from = 0) => Buffer.from(Array.from({ length: n }, (_, i) => one(from + i)).join(''));
  const expected = (n: number, from = 0) =>
    Array.from({ length: n }, (_, k) => ({ i: from + k, s: `a "${from + k}" \\ b`, o: { x: `x${from + k}` }, l: [{ z: 'y' }, { z: `z, ${from + k}` }] }));
  const inline = async (t: Buffer) => {
    setRecordsWorkers(0);
    try {
      return utf8(await recordsWriter(row)(t));
    } finally {
      setRecordsWorkers(2);
    }
  };
  beforeAll(() => setRecordsWorkers(2));
  afterAll(() => setRecordsWorkers(undefined));

  it('a large list is written by a worker, the same JSON as on this thread; a small one here', async () => {
    const big = text(2000);
    expect(big.length).toBeGreaterThan(OFFLOAD_MIN);
    const before = recordsPoolCounts.written;
    const out = recordsWriter(row)(big);
    expect(out).toBeInstanceOf(Promise);
    const json = utf8(await out);
    expect(recordsPoolCounts.written).toBe(before + 1);
    expect(json).toBe(await inline(big));
    expect(JSON.parse(json)).toEqual(expected(2000));
    // More than a slice: written by the worker at once.
    const huge = text(60_000);
    expect(huge.length).toBeGreaterThan(1 << 20);
    expect(utf8(await recordsWriter(row)(huge))).toBe(await inline(huge));
    expect(recordsPoolCounts.written).toBe(before + 2);
    // Under the threshold: at once, on this thread.
    const small = text(10);
    expect(small.length).toBeLessThan(OFFLOAD_MIN);
    expect(JSON.parse(written(recordsWriter(row)(small)))).toEqual(expected(10));
    expect(recordsPoolCounts.written).toBe(before + 2);
  });

  it('hands a list over through a lane, lends its answer from there, and reuses the lane once it is given back', async () => {
    const big = text(2000);
    const want = await inline(big);
    const { lanesMade, lanesReused } = recordsPoolCounts;
    const first = (await recordsWriter(row)(big)) as Uint8Array;
    expect(first.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(utf8(first)).toBe(want);
    // Not given back: the next list takes another lane, and the first answer stays as it was.
    const second = (await recordsWriter(row)(text(2000, 5))) as Uint8Array;
    expect(second.buffer).not.toBe(first.buffer);
    expect(JSON.parse(utf8(second))).toEqual(expected(2000, 5));
    expect(utf8(first)).toBe(want);
    // Given back: the lane is the next list's.
    answerWritten(first);
    const reused = recordsPoolCounts.lanesReused;
    const third = (await recordsWriter(row)(text(1900, 7))) as Uint8Array;
    expect(third.buffer).toBe(first.buffer);
    expect(recordsPoolCounts.lanesReused).toBe(reused + 1);
    expect(JSON.parse(utf8(third))).toEqual(expected(1900, 7));
    expect(recordsPoolCounts.lanesMade).toBeGreaterThan(lanesMade);
    expect(recordsPoolCounts.lanesReused).toBeGreaterThan(lanesReused);
    answerWritten(second);
    answerWritten(third);
  });

  it('a list whose JSON outgrows its lane comes back in a buffer of the worker\'s own, the same JSON', async () => {
    // Long keys and one-byte fields: many more bytes of JSON than of text.
    const wide: RecordRow = { keys: ['a_key_long_enough_to_outgrow_the_lane', 'another_key_long_enough_to_outgrow'], cols: ['int', 'bool'] };
    const t = Buffer.from('(1,t)'.repeat(20_000));
    const before = recordsPoolCounts.written;
    const out = (await recordsWriter(wide)(t)) as Uint8Array;
    expect(recordsPoolCounts.written).toBe(before + 1);
    expect(out.buffer).not.toBeInstanceOf(SharedArrayBuffer);
    const got = JSON.parse(utf8(out));
    expect(got).toHaveLength(20_000);
    expect(got[19_999]).toEqual({ a_key_long_enough_to_outgrow_the_lane: 1, another_key_long_enough_to_outgrow: true });
  });

  it('many lists at once, of several shapes, each answer its own', async () => {
    const other: RecordRow = { keys: ['n'], cols: ['int'] };
    const lists = Array.from({ length: 12 }, (_, k) => k);
    const outs = await Promise.all(
      lists.map((k) => (k % 3 === 0 ? recordsWriter(other)(Buffer.from(Array.from({ length: 20_000 + k }, (_, i) => `(${i})`).join(''))) : recordsWriter(row)(text(1500 + k, k * 10)))),
    );
    outs.forEach((out, k) => {
      const got = JSON.parse(utf8(out));
      if (k % 3 === 0) expect(got).toEqual(Array.from({ length: 20_000 + k }, (_, i) => ({ n: i })));
      else expect(got).toEqual(expected(1500 + k, k * 10));
    });
  });

  it('a text that is not the plan\'s records is refused, as on this thread', async () => {
    const bad = Buffer.concat([text(2000), Buffer.from('(1,"unterminated')]);
    await expect(recordsWriter(row)(bad)).rejects.toThrow(/a record ends inside a quoted field/);
    // The worker goes on answering.
    expect(JSON.parse(utf8(await recordsWriter(row)(text(2000))))).toEqual(expected(2000));
  });

  it('a worker stopped with lists in hand leaves them to this thread, and the next list starts another', async () => {
    const fellBack = recordsPoolCounts.fellBack;
    const started = recordsPoolCounts.started;
    const huge = text(80_000);
    const outs = [recordsWriter(row)(huge), recordsWriter(row)(huge), recordsWriter(row)(huge)];
    await stopRecordsWorkers();
    const jsons = await Promise.all(outs);
    expect(recordsPoolCounts.fellBack - fellBack).toBeGreaterThan(0);
    for (const j of jsons) expect(JSON.parse(utf8(j)).at(-1)).toEqual(expected(1, 79_999)[0]);
    const written = recordsPoolCounts.written;
    expect(JSON.parse(utf8(await recordsWriter(row)(text(2000))))).toEqual(expected(2000));
    expect(recordsPoolCounts.written).toBe(written + 1);
    expect(recordsPoolCounts.started).toBeGreaterThan(started);
  });

  it('no workers: every list on this thread', async () => {
    setRecordsWorkers(0);
    try {
      const written = recordsPoolCounts.written;
      expect(JSON.parse(utf8(await recordsWriter(row)(text(2000))))).toEqual(expected(2000));
      expect(recordsPoolCounts.written).toBe(written);
    } finally {
      setRecordsWorkers(2);
    }
  });
});

describe('a large list\'s records read into a buffer given back (Note [Read buffers given back] in ./pg-socket.ts)', () => {
  const server = useServer(`
    create table wide (id int primary key, body text);
    insert into wide select g, repeat(chr(97 + g % 26), 40 + g % 20) from generate_series(1, 2000) g;
  `);
  beforeAll(async () => {
    expect((await server.metadata({ type: 'pg_track_table', args: { table: 'wide' } })).status).toBe(200);
  });
  const want = Array.from({ length: 2000 }, (_, k) => ({ id: k + 1, body: String.fromCharCode(97 + ((k + 1) % 26)).repeat(40 + ((k + 1) % 20)) }));

  it('a large value answered as PostgreSQL wrote it is lent to its answer, its buffer given back once sent; not in a batch', async () => {
    const query = '{ wide_aggregate(order_by: {id: asc}) { nodes { id body } } }';
    const before = { ...readBuffers };
    for (let i = 0; i < 3; i++) expect((await server.gql(query)).data.wide_aggregate.nodes).toEqual(want);
    expect(readBuffers.large - before.large).toBe(3);
    // Given back once Node has sent each answer (its 'finish', which may come after the client has read it).
    await vi.waitFor(() => expect(readBuffers.givenBack - before.givenBack).toBe(3));
    expect(readBuffers.reused - before.reused).toBeGreaterThanOrEqual(2);
    const many = await Promise.all(Array.from({ length: 6 }, (_, k) => server.gql(`{ wide_aggregate(order_by: {id: asc}, offset: ${k}) { nodes { id body } } }`)));
    many.forEach((r, k) => expect(r.data.wide_aggregate.nodes).toEqual(want.slice(k)));
    // A batch decodes its answers' text and gives nothing back.
    await vi.waitFor(() => expect(readBuffers.givenBack - before.givenBack).toBe(9));
    const batch = await server.request('POST', '/v1/graphql', [{ query }, { query }]);
    expect(batch.body.map((a: { data: { wide_aggregate: { nodes: unknown[] } } }) => a.data.wide_aggregate.nodes)).toEqual([want, want]);
    await new Promise((r) => setTimeout(r, 50));
    expect(readBuffers.givenBack - before.givenBack).toBe(9);
  });

  for (const workers of [0, 1]) {
    it(`the writer gives the text's buffer back once it has read it, and the next list is read into it (${workers} workers)`, async () => {
      setRecordsWorkers(workers);
      try {
        const before = { ...readBuffers };
        for (let i = 0; i < 3; i++) expect((await server.gql('{ wide(order_by: {id: asc}) { id body } }')).data.wide).toEqual(want);
        expect(readBuffers.large - before.large).toBe(3);
        expect(readBuffers.givenBack - before.givenBack).toBe(3);
        expect(readBuffers.reused - before.reused).toBeGreaterThanOrEqual(2);
        // Many at once: each read into a buffer of its own, each answer its own.
        const many = await Promise.all(Array.from({ length: 8 }, (_, k) => server.gql(`{ wide(order_by: {id: asc}, offset: ${k}) { id body } }`)));
        many.forEach((r, k) => expect(r.data.wide).toEqual(want.slice(k)));
      } finally {
        setRecordsWorkers(undefined);
      }
    });
  }
});
