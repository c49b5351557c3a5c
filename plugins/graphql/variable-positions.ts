/**
 * Hasura's check of variable positions, in place of graphql-js's VariablesInAllowedPositionRule.
 *
 * Note [Variable positions ignore item nullability]
 * The GraphQL spec (§5.8.5) refuses a variable of type `[String]` where `[String!]` is expected.
 * Hasura v2 compares the variable's and the location's types with the nullability of every list
 * item dropped: only the outermost nullability counts (a nullable variable at a non-null
 * location needs a default, on either side, as in the spec). Clients of Hasura rely on it: its
 * array columns (`text[]` as `[String!]`, Note [Array columns] in plugins/postgres/dialect.ts)
 * are written with `$tags: [String]` in its own test suite. A null item then reaches the root
 * field's planning, which takes it as the source does (PostgreSQL: a NULL array element).
 * The message of a refusal is graphql-js's.
 */
import {
  GraphQLError,
  isListType,
  isNonNullType,
  Kind,
  typeFromAST,
  type ASTVisitor,
  type GraphQLType,
  type ValidationContext,
  type VariableDefinitionNode,
} from 'graphql';

/** Whether a variable of type `v` may stand where `l` is expected, item nullability aside. */
function sameUpToItemNullability(l: GraphQLType, v: GraphQLType): boolean {
  const lt = isNonNullType(l) ? l.ofType : l;
  const vt = isNonNullType(v) ? v.ofType : v;
  if (isListType(lt) && isListType(vt)) return sameUpToItemNullability(lt.ofType, vt.ofType);
  if (isListType(lt) || isListType(vt)) return false;
  return lt === vt;
}

export function HasuraVariablesInAllowedPosition(context: ValidationContext): ASTVisitor {
  let defs: Record<string, VariableDefinitionNode> = Object.create(null);
  return {
    OperationDefinition: {
      enter() {
        defs = Object.create(null);
      },
      leave(operation) {
        for (const { node, type, defaultValue } of context.getRecursiveVariableUsages(operation)) {
          const name = node.name.value;
          const def = defs[name];
          if (!def || !type) continue;
          const varType = typeFromAST(context.getSchema(), def.type);
          if (!varType) continue;
          let ok: boolean;
          if (isNonNullType(type) && !isNonNullType(varType)) {
            const varDefault = def.defaultValue !== undefined && def.defaultValue.kind !== Kind.NULL;
            ok = (varDefault || defaultValue !== undefined) && sameUpToItemNullability(type.ofType, varType);
          } else ok = sameUpToItemNullability(type, varType);
          if (!ok) {
            context.reportError(
              new GraphQLError(`Variable "$${name}" of type "${String(varType)}" used in position expecting type "${String(type)}".`, { nodes: [def, node] }),
            );
          }
        }
      },
    },
    VariableDefinition(node) {
      defs[node.variable.name.value] = node;
    },
  };
}
