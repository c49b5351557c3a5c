/**
 * Command group: permissions (scaffold; see the issue notes for what it implements).
 */
import type { CommandGroup } from './types.js';
import type { DatabaseService } from './service.js';

export function permissionsGroup(db: DatabaseService): CommandGroup {
  void db;
  return { name: 'permissions', operations: () => [] };
}
