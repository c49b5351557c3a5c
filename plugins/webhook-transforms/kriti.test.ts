/**
 * The Kriti subset of the transforms (kriti.ts), on the templates Hasura's documentation and
 * test suite use, and its errors.
 */
import { describe, expect, it } from 'vitest';
import { compileTemplate, KritiError } from './kriti.js';

const render = (t: string, vars: Record<string, unknown>) => compileTemplate(t).render(vars);
const body = { input: { arg: { id: 'i1', name: 'n1' }, list: [1, 2, 3] }, action: { name: 'a' }, session_variables: { 'x-svc-role': 'user' } };

describe('kriti', () => {
  it('renders JSON with paths, string interpolation, index and key access', () => {
    expect(render('{"id": {{ $body.input.arg.name }}, "s": "x-{{$body.input.arg.id}}-{{ $body.input.list[1] }}", "r": {{ $body.session_variables["x-svc-role"] }}, "n": [1, true, null, "q"]}', { $body: body })).toEqual({
      id: 'n1',
      s: 'x-i1-2',
      r: 'user',
      n: [1, true, null, 'q'],
    });
    expect(render('{{ $body }}', { $body: 'scalar' })).toBe('scalar');
    expect(render('"\\"quoted\\" \\u00e9"', {})).toBe('"quoted" é');
  });

  it('ranges over lists (with and without an index) and objects', () => {
    expect(render('{{ range i, x := $body.input.list }} {"i": {{ i }}, "x": {{ x }}} {{ end }}', { $body: body })).toEqual([
      { i: 0, x: 1 },
      { i: 1, x: 2 },
      { i: 2, x: 3 },
    ]);
    expect(render('{{ range x := $body.input.list }}{{ x }}{{ end }}', { $body: body })).toEqual([1, 2, 3]);
    expect(render('{{ range k, v := $body.input.arg }}"{{ k }}={{ v }}"{{ end }}', { $body: body })).toEqual(['id=i1', 'name=n1']);
  });

  it('chooses with if, elif and else; compares; combines with && || not ??', () => {
    const t = '{{ range i, x := $body.input.list }} {{ if i == 0 }} "first" {{ elif x >= 3 && not(x == 4) }} "big" {{ else }} {{ x }} {{ end }} {{ end }}';
    expect(render(t, { $body: body })).toEqual(['first', 2, 'big']);
    expect(render('{{ $body.missing ?? "default" }}', { $body: body })).toBe('default');
    expect(render('{{ $body.input.arg.id ?? "default" }}', { $body: body })).toBe('i1');
    expect(render('{{ if $body.input.arg.id != "x" || false }} 1 {{ end }}', { $body: body })).toBe(1);
    expect(render('{{ if false }} 1 {{ end }}', {})).toBeNull();
    expect(render('[{{ length($body.input.list) }}, {{ empty($body.input.nothing) }}, {{ toUpper($body.action.name) }}, {{ toString($body.input.list) }}]', { $body: body })).toEqual([3, true, 'A', '[1,2,3]']);
  });

  it('a missing path is null', () => {
    expect(render('{"a": {{ $body.x.y.z }}}', { $body: body })).toEqual({ a: null });
  });

  it('refuses what does not parse, naming where', () => {
    for (const t of ['{"a": {{ range }}', '{"a": 1', '{{ $body.a', '{"a" 1}', '{{ range x := $body }} 1', '{{ if }} 1 {{ end }}', '{"a": 1} trailing', '{{ $body[x] }}']) {
      expect(() => compileTemplate(t), t).toThrow(KritiError);
    }
  });

  it('refuses unknown variables and functions when rendering', () => {
    expect(() => render('{{ $nope }}', {})).toThrow('unbound variable "$nope"');
    expect(() => render('{{ nope(1) }}', {})).toThrow('unknown function "nope"');
  });
});
