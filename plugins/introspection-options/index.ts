/**
 * GraphQL introspection options (issue 24; Hasura v2's `set_graphql_schema_introspection_options`):
 *   - metadata: `graphql_schema_introspection` (`{disabled_for_roles: [...]}`), exported,
 *     replaced and cleared with the rest;
 *   - operation: `set_graphql_introspection_options` (the SPEC's name) and Hasura's
 *     `set_graphql_schema_introspection_options`: the options are replaced as a whole;
 *   - enforcement by a document gate (Note [Document gates] in core/plugin.ts): for a role listed,
 *     a document that selects `__schema` or `__type` at an operation's root is refused as Hasura
 *     refuses it, the field being absent from that role's `query_root` (`validation-failed`,
 *     "field '__schema' not found in type: 'query_root'"). `__typename` stays, as in Hasura.
 *     The answer depends only on the role, the document and the build, so it is cached with the
 *     plan; a role not listed, admin included, pays nothing more than a set lookup per new document.
 */
import { Kind, type DocumentNode, type SelectionSetNode } from 'graphql';
import * as v from '../../core/valibot.js';
import { definePlugin, type BuildResult, type Metadata } from '../../core/plugin.js';
import { nonEmptyText } from '../../core/validation.js';
import { GRAPHQL } from '../graphql/index.js';

const SUCCESS = { message: 'success' };
const KEY = 'graphql_schema_introspection';
const STEP = 'introspection-options';

const OptionsSchema = v.object({ disabled_for_roles: v.optional(v.array(nonEmptyText), []) });
type Options = v.InferOutput<typeof OptionsSchema>;

const optionsOf = (md: Metadata): Options => (md[KEY] as Options | undefined) ?? { disabled_for_roles: [] };

/** The introspection field an operation of the document selects at its root (fragments followed),
 * with the path Hasura reports it at; undefined when none. */
function introspectionField(document: DocumentNode): { name: string; path: string } | undefined {
  const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d.selectionSet] as const] : [])));
  const seen = new Set<string>();
  const find = (set: SelectionSetNode): string | undefined => {
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) {
        if (s.name.value === '__schema' || s.name.value === '__type') return s.alias ? s.alias.value : s.name.value;
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        const f = find(s.selectionSet);
        if (f) return f;
      } else if (!seen.has(s.name.value)) {
        seen.add(s.name.value);
        const frag = fragments.get(s.name.value);
        const f = frag && find(frag);
        if (f) return f;
      }
    }
    return undefined;
  };
  for (const d of document.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION || d.operation !== 'query') continue;
    const key = find(d.selectionSet);
    if (key) {
      const field = d.selectionSet.selections.find((s) => s.kind === Kind.FIELD && (s.alias?.value ?? s.name.value) === key);
      const name = field?.kind === Kind.FIELD ? field.name.value : key;
      return { name, path: `$.selectionSet.${key}` };
    }
  }
  return undefined;
}

export default definePlugin({
  name: 'introspection-options',
  // The gate is the GraphQL plugin's (issue 22); without it there is only the metadata to keep.
  after: ['graphql'],
  requires: [],
  setup(k) {
    const graphql = k.optional(GRAPHQL);
    // Hasura's export order: ..., api_limits, inherited_roles (92), graphql_schema_introspection, ...
    k.metadataSection({
      key: KEY,
      order: 94,
      schema: OptionsSchema,
      empty: () => ({ disabled_for_roles: [] }),
      isEmpty: (x) => ((x as Options | undefined)?.disabled_for_roles ?? []).length === 0,
    });

    k.buildStep<ReadonlySet<string>>({ name: STEP, run: (ctx) => new Set(optionsOf(ctx.metadata).disabled_for_roles) });

    const set = {
      args: OptionsSchema,
      mutates: true,
      run: (a: Options, ctx: { metadata: Metadata }) => ({ metadata: { ...ctx.metadata, [KEY]: { disabled_for_roles: [...new Set(a.disabled_for_roles)] } }, response: SUCCESS }),
    };
    k.operation({ type: 'set_graphql_introspection_options', ...set });
    k.operation({ type: 'set_graphql_schema_introspection_options', ...set });

    graphql?.documentGate({
      name: 'introspection-options',
      check({ document, role, build }) {
        const disabled = (build as BuildResult).outputs.get(STEP) as ReadonlySet<string> | undefined;
        if (!disabled?.size || !disabled.has(role)) return undefined;
        const f = introspectionField(document);
        if (!f) return undefined;
        return { code: 'validation-failed', message: `field '${f.name}' not found in type: 'query_root'`, path: f.path };
      },
    });
  },
});
