/**
 * Command group: functions (scaffold; see the issue notes for what it implements).
 */
import type { CommandGroup } from './types.js';
import type { DatabaseService } from './service.js';

export function functionsGroup(db: DatabaseService): CommandGroup {
  void db;
  return { name: 'functions', operations: () => [] };
}
