/**
 * The console's pure helpers, without a browser: the DDL the Data pages show and send
 * (console/src/pages/data/ddl.ts), checked against PostgreSQL itself where it matters (the
 * statements run, do what they say, and refuse bad type names before anything is sent), and the
 * SDL <-> metadata conversions of the Actions page (console/src/pages/actions/sdl.ts).
 */
import { describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { createDatabase } from '../helpers.js';
import { addColumnSql, alterColumnSql, createTableSql, dropColumnSql, renameTableSql, typeSql, type ColumnSpec } from '../../console/src/pages/data/ddl.js';
import { actionSdl, mergeTypes, parseActionSdl, parseTypesSdl, typesSdl, typesUsed } from '../../console/src/pages/actions/sdl.js';

const col = (name: string, type: string, more: Partial<ColumnSpec> = {}): ColumnSpec => ({ name, type, nullable: true, unique: false, default: '', ...more });

describe('the DDL of the Data pages', () => {
  it('quotes identifiers and writes keys, defaults and a comment', () => {
    const sql = createTableSql({
      schema: 'my schema',
      name: 'we"ird',
      columns: [col('id', 'serial', { nullable: false }), col('author id', 'integer'), col('at', 'timestamp with time zone', { default: 'now()' }), col('code', 'varchar(8)', { unique: true })],
      primaryKey: ['id'],
      foreignKeys: [{ columns: ['author id'], refSchema: 'public', refTable: 'author', refColumns: ['id'], onUpdate: 'restrict', onDelete: 'cascade' }],
      comment: "it's here",
    });
    expect(sql).toBe(
      [
        'CREATE TABLE "my schema"."we""ird" (',
        '  "id" serial NOT NULL,',
        '  "author id" integer,',
        '  "at" timestamp with time zone DEFAULT now(),',
        '  "code" varchar(8) UNIQUE,',
        '  PRIMARY KEY ("id"),',
        '  FOREIGN KEY ("author id") REFERENCES "public"."author" ("id") ON UPDATE restrict ON DELETE cascade',
        ');',
        `COMMENT ON TABLE "my schema"."we""ird" IS 'it''s here';`,
      ].join('\n'),
    );
  });

  it('refuses what cannot be a table before anything is sent', () => {
    const base = { schema: 'public', name: 't', columns: [col('a', 'text')], primaryKey: [], foreignKeys: [], comment: '' };
    expect(() => createTableSql({ ...base, name: ' ' })).toThrow('the table needs a name');
    expect(() => createTableSql({ ...base, columns: [] })).toThrow('at least one column');
    expect(() => createTableSql({ ...base, columns: [col('a', 'text'), col('a', 'int')] })).toThrow('two columns are named "a"');
    expect(() => createTableSql({ ...base, primaryKey: ['b'] })).toThrow('"b", which is no column');
    expect(() => createTableSql({ ...base, foreignKeys: [{ columns: ['a'], refSchema: 'public', refTable: 'x', refColumns: [], onUpdate: 'restrict', onDelete: 'restrict' }] })).toThrow('as many columns');
    for (const bad of ['text; drop table x', 'int)', "text default 'x'", '']) expect(() => typeSql(bad), bad).toThrow('is not a column type');
    for (const good of ['integer', 'double precision', 'numeric(10, 2)', 'text[]', 'public.my_enum', 'timestamp with time zone', 'int[3]']) expect(typeSql(good)).toBe(good);
  });

  it('alters only what changed, renaming last; the statements run in PostgreSQL and do what they say', async () => {
    const before = col('title', 'text');
    expect(alterColumnSql('public', 'post', before, before)).toBe('');
    const sql = alterColumnSql('public', 'post', before, { name: 'headline', type: 'varchar(80)', nullable: false, unique: true, default: "'untitled'" });
    expect(sql.split('\n')).toEqual([
      'ALTER TABLE "public"."post" ALTER COLUMN "title" TYPE varchar(80) USING "title"::varchar(80);',
      'ALTER TABLE "public"."post" ALTER COLUMN "title" SET NOT NULL;',
      `ALTER TABLE "public"."post" ALTER COLUMN "title" SET DEFAULT 'untitled';`,
      'ALTER TABLE "public"."post" ADD CONSTRAINT "post_title_key" UNIQUE ("title");',
      'ALTER TABLE "public"."post" RENAME COLUMN "title" TO "headline";',
    ]);
    const db = await createDatabase('svc_console_ddl');
    const sqlc = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      await sqlc.unsafe(createTableSql({ schema: 'public', name: 'post', columns: [col('id', 'serial', { nullable: false }), col('title', 'text')], primaryKey: ['id'], foreignKeys: [], comment: '' }));
      await sqlc.unsafe(`insert into post (title) values ('a')`);
      await sqlc.unsafe(sql);
      await sqlc.unsafe(addColumnSql('public', 'post', col('body', 'text', { default: "''", nullable: false })));
      const cols = await sqlc.unsafe(
        `select column_name, data_type, is_nullable, column_default from information_schema.columns where table_name = 'post' order by ordinal_position`,
      );
      expect(cols.map((c) => [c.column_name, c.data_type, c.is_nullable, c.column_default])).toEqual([
        ['id', 'integer', 'NO', "nextval('post_id_seq'::regclass)"],
        ['headline', 'character varying', 'NO', "'untitled'::character varying"],
        ['body', 'text', 'NO', "''::text"],
      ]);
      // The unique constraint is dropped by the name it was given.
      const undo = alterColumnSql('public', 'post', { ...col('headline', 'varchar(80)'), nullable: false, unique: true, default: "'untitled'" }, { ...col('headline', 'varchar(80)'), nullable: true, unique: false, default: '' }, 'post_title_key');
      await sqlc.unsafe(undo);
      await sqlc.unsafe(dropColumnSql('public', 'post', 'body'));
      await sqlc.unsafe(renameTableSql('public', 'post', 'article'));
      const left = await sqlc.unsafe(`select conname from pg_constraint where conrelid = 'article'::regclass order by 1`);
      expect(left.map((r) => r.conname)).toEqual(['post_pkey']);
      expect((await sqlc.unsafe(`select count(*)::int as n from article where headline = 'a'`))[0]!.n).toBe(1);
    } finally {
      await sqlc.end({ timeout: 1 });
    }
  });
});

describe('the SDL of the Actions page', () => {
  it('reads an action definition, with its description as the comment', () => {
    expect(parseActionSdl('type Mutation {\n  "Logs in"\n  login(username: String!, "the secret" password: String!): [Token!]\n}')).toEqual({
      name: 'login',
      type: 'mutation',
      arguments: [
        { name: 'username', type: 'String!' },
        { name: 'password', type: 'String!', description: 'the secret' },
      ],
      output_type: '[Token!]',
      description: 'Logs in',
    });
    expect(parseActionSdl('extend type Query { me: User }')).toMatchObject({ name: 'me', type: 'query', arguments: [] });
  });

  it('refuses a definition that is not one action, saying why', () => {
    expect(() => parseActionSdl('type Mutation { a: Int')).toThrow(/^Action definition: Syntax Error/);
    expect(() => parseActionSdl('type Mutation { a: Int b: Int }')).toThrow('exactly one field');
    expect(() => parseActionSdl('type Foo { a: Int }')).toThrow('expected one `type Mutation');
    expect(() => parseActionSdl('type Query { a: Int } type Mutation { b: Int }')).toThrow('expected one `type Mutation');
  });

  it('writes an action back as the SDL it was read from', () => {
    const sdl = 'type Mutation {\n  "Logs in"\n  login(username: String!, "the secret" password: String!): Token\n}\n';
    const a = parseActionSdl(sdl);
    expect(actionSdl({ name: a.name, comment: a.description, definition: { handler: 'h', type: a.type, arguments: a.arguments, output_type: a.output_type } })).toBe(sdl);
  });

  it('reads and writes custom types of each kind, and refuses what is not one', () => {
    const sdl = 'scalar Email\n\nenum Color {\n  RED\n  "old" BLUE @deprecated\n}\n\ninput Login {\n  email: Email!\n  color: Color\n}\n\n"A token"\ntype Token {\n  value: String!\n}\n';
    const ct = parseTypesSdl(sdl);
    expect(ct).toEqual({
      scalars: [{ name: 'Email' }],
      enums: [{ name: 'Color', values: [{ value: 'RED' }, { value: 'BLUE', description: 'old', is_deprecated: true }] }],
      input_objects: [{ name: 'Login', fields: [{ name: 'email', type: 'Email!' }, { name: 'color', type: 'Color' }] }],
      objects: [{ name: 'Token', description: 'A token', fields: [{ name: 'value', type: 'String!' }] }],
    });
    expect(parseTypesSdl(typesSdl(ct))).toEqual(ct);
    expect(() => parseTypesSdl('type T { a(x: Int): Int }')).toThrow('take no arguments');
    expect(() => parseTypesSdl('interface I { a: Int }')).toThrow('only scalar, enum, input and type');
    expect(() => parseTypesSdl('scalar A\ninput A { x: Int }')).toThrow('A is defined twice');
  });

  it('merges types by name, keeping relationships, and finds the types an action uses', () => {
    const rel = { name: 'user', type: 'object', remote_table: { schema: 'public', name: 'user' }, field_mapping: { id: 'id' } };
    const current = { objects: [{ name: 'Token', fields: [{ name: 'a', type: 'Int' }], relationships: [rel] }, { name: 'Other', fields: [{ name: 'b', type: 'Int' }] }], scalars: [{ name: 'Token2' }] };
    const merged = mergeTypes(current, { objects: [{ name: 'Token', fields: [{ name: 'c', type: 'String' }] }], input_objects: [{ name: 'Token2', fields: [{ name: 'x', type: 'Int' }] }] });
    expect(merged).toEqual({
      input_objects: [{ name: 'Token2', fields: [{ name: 'x', type: 'Int' }] }],
      objects: [{ name: 'Other', fields: [{ name: 'b', type: 'Int' }] }, { name: 'Token', fields: [{ name: 'c', type: 'String' }], relationships: [rel] }],
    });
    expect(mergeTypes(current, { scalars: [{ name: 'X' }] }, true)).toEqual({ scalars: [{ name: 'X' }] });
    const ct = parseTypesSdl('input In { s: Nested } input Nested { e: Color } enum Color { RED } type Out { x: Int } type Unused { y: Int }');
    expect([...typesUsed({ arguments: [{ name: 'a', type: '[In!]!' }], output_type: 'Out' }, ct)].sort()).toEqual(['Color', 'In', 'Nested', 'Out']);
  });
});
