/**
 * Command group: computed-fields (scaffold; see the issue notes for what it implements).
 */
import type { CommandGroup } from './types.js';
import type { DatabaseService } from './service.js';

export function computedFieldsGroup(db: DatabaseService): CommandGroup {
  void db;
  return { name: 'computed-fields', operations: () => [] };
}
