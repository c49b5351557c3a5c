/** Structured diffs (Note [Metadata diffs]): the shapes and paths, without a database. */
import { describe, expect, it } from 'vitest';
import { diffDocuments, diffValues } from './diff.js';

describe('diffDocuments', () => {
  const source = (tables: unknown[]) => ({ version: 3, sources: [{ name: 'default', kind: 'postgres', tables }] });
  const author = { table: { schema: 'public', name: 'author' } };
  const article = { table: { schema: 'public', name: 'article' } };

  it('matches named list elements by name, whatever their position or order', () => {
    expect(diffDocuments(source([author]), source([article, author]))).toEqual([{ kind: 'added', path: 'sources[default].tables[public.article]', value: article }]);
    expect(diffDocuments(source([author, article]), source([article, author]))).toEqual([]);
    expect(diffDocuments(source([author, article]), source([article]))).toEqual([{ kind: 'removed', path: 'sources[default].tables[public.author]', value: author }]);
  });

  it('names elements by role, role_name, collection and function too', () => {
    const perm = (cols: string[]) => ({ role: 'user', permission: { columns: cols } });
    expect(diffValues({ p: [perm(['a'])] }, { p: [perm(['a', 'b'])] })).toEqual([{ kind: 'changed', path: 'p[user].permission.columns', from: ['a'], to: ['a', 'b'] }]);
    expect(diffValues({ r: [{ role_name: 'x', role_set: ['a'] }] }, { r: [] })).toEqual([{ kind: 'removed', path: 'r[x]', value: { role_name: 'x', role_set: ['a'] } }]);
    expect(diffValues({ a: [] }, { a: [{ collection: 'c' }] })).toEqual([{ kind: 'added', path: 'a[c]', value: { collection: 'c' } }]);
    expect(diffValues({ f: [{ function: { schema: 's', name: 'fn' } }] }, { f: [{ function: { schema: 's', name: 'fn' }, configuration: {} }] })).toEqual([
      { kind: 'added', path: 'f[s.fn].configuration', value: {} },
    ]);
  });

  it('compares lists without names, or with a name twice, as one value', () => {
    expect(diffValues({ c: ['a', 'b'] }, { c: ['b', 'a'] })).toEqual([{ kind: 'changed', path: 'c', from: ['a', 'b'], to: ['b', 'a'] }]);
    const twice = [{ name: 'x', v: 1 }, { name: 'x', v: 2 }];
    expect(diffValues({ l: twice }, { l: [{ name: 'x', v: 1 }] })).toEqual([{ kind: 'changed', path: 'l', from: twice, to: [{ name: 'x', v: 1 }] }]);
    expect(diffValues({ l: [{ name: 'x' }, { other: 1 }] }, { l: [{ name: 'x' }] })).toEqual([{ kind: 'changed', path: 'l', from: [{ name: 'x' }, { other: 1 }], to: [{ name: 'x' }] }]);
  });

  it('a key set to null is a key not set; a change of type is changed', () => {
    expect(diffValues({ a: null, b: 1 }, { b: 1 })).toEqual([]);
    expect(diffValues({ a: null }, { a: 2 })).toEqual([{ kind: 'added', path: 'a', value: 2 }]);
    expect(diffValues({ a: { x: 1 } }, { a: [1] })).toEqual([{ kind: 'changed', path: 'a', from: { x: 1 }, to: [1] }]);
    expect(diffValues(1, 2)).toEqual([{ kind: 'changed', path: '', from: 1, to: 2 }]);
  });

  it('quotes keys that are not plain names, and names holding brackets or quotes', () => {
    expect(diffValues({ 'x-svc-user-id': 1 }, { 'x-svc-user-id': 2 })).toEqual([{ kind: 'changed', path: '["x-svc-user-id"]', from: 1, to: 2 }]);
    expect(diffValues({ l: [] }, { l: [{ name: 'a[0]' }] })).toEqual([{ kind: 'added', path: 'l["a[0]"]', value: { name: 'a[0]' } }]);
    expect(diffValues({ l: [] }, { l: [{ name: 'my table' }] })).toEqual([{ kind: 'added', path: 'l[my table]', value: { name: 'my table' } }]);
  });

  it('by position, as the CLI compares one file', () => {
    expect(diffValues({ c: ['a', 'b'] }, { c: ['a'] }, { lists: 'position' })).toEqual([{ kind: 'removed', path: 'c[1]', value: 'b' }]);
    expect(diffValues([{ name: 'x' }], [{ name: 'y' }], { lists: 'position' })).toEqual([{ kind: 'changed', path: '[0].name', from: 'x', to: 'y' }]);
  });
});
