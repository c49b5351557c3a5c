/**
 * The pure parts of boolean expressions: normalisation and renames over metadata alone (the
 * schema-dependent checks are covered through the API in permissions.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { BoolExpParseError, boolExpRefs, parseBoolExp, renameInBoolExp, sourceView } from './boolexp.js';
import type { TableMeta } from './types.js';

const author = { schema: 'public', name: 'author' };
const article = { schema: 'public', name: 'article' };
const tables: TableMeta[] = [
  {
    table: author,
    // Stored names are qualified (parsing qualified them): without a dialect no default schema is known.
    array_relationships: [{ name: 'articles', using: { foreign_key_constraint_on: { table: { schema: 'public', name: 'article' }, column: 'author_id' } } }],
  },
  {
    table: article,
    object_relationships: [{ name: 'writer', using: { manual_configuration: { remote_table: { schema: 'public', name: 'author' }, column_mapping: { author_id: 'id' } } } }],
  },
];
const view = sourceView(tables, undefined, false, undefined);

describe('parseBoolExp', () => {
  it('spells logical operators with _ and writes a repeated one out as _and', () => {
    expect(parseBoolExp({ $or: [{ a: 1 }], $not: { $exists: { _table: 't', _where: {} } }, b: { $eq: 2 } }, 'public')).toEqual({
      _or: [{ a: 1 }],
      _not: { _exists: { _table: { schema: 'public', name: 't' }, _where: {} } },
      b: { $eq: 2 },
    });
    expect(parseBoolExp({ _or: [{ a: 1 }], $or: [{ b: 2 }] }, 'public')).toEqual({ _and: [{ _or: [{ a: 1 }] }, { _or: [{ b: 2 }] }] });
  });

  it('reports where the structure is wrong', () => {
    let err: unknown;
    try {
      parseBoolExp({ _and: [{}, { _or: 'x' }] }, 'public');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(BoolExpParseError);
    expect(err).toMatchObject({ path: ['_and', 1, '_or'], message: 'parsing [] failed, expected Array, but encountered String' });
  });
});

describe('renameInBoolExp', () => {
  const exp = { articles: { writer: { articles: { title: 'x' } }, _or: [{ writer: { id: 1 } }] }, id: { _ceq: 'id' } };

  it('renames a relationship wherever the walk reaches its table', () => {
    expect(renameInBoolExp(exp, author, { kind: 'relationship', table: article, from: 'writer', to: 'author' }, view)).toEqual({
      articles: { author: { articles: { title: 'x' } }, _or: [{ author: { id: 1 } }] },
      id: { _ceq: 'id' },
    });
  });

  it('renames a column only on its own table, including column operands', () => {
    expect(renameInBoolExp(exp, author, { kind: 'column', table: author, from: 'id', to: 'author_id' }, view)).toEqual({
      articles: { writer: { articles: { title: 'x' } }, _or: [{ writer: { author_id: 1 } }] },
      author_id: { _ceq: 'author_id' },
    });
  });

  it('returns the same object when nothing refers to the renamed field', () => {
    expect(renameInBoolExp(exp, author, { kind: 'relationship', table: author, from: 'writer', to: 'x' }, view)).toBe(exp);
  });
});

describe('boolExpRefs', () => {
  it('lists columns, relationships and tables reached, marking static comparisons', () => {
    expect(boolExpRefs({ articles: { title: 'x', author_id: 'X-Svc-User-Id' }, _exists: { _table: article, _where: {} } }, author, view)).toEqual([
      { kind: 'relationship', table: author, name: 'articles' },
      { kind: 'column', table: article, column: 'title', onType: true },
      { kind: 'column', table: article, column: 'author_id', onType: false },
      { kind: 'table', table: article },
    ]);
  });
});
