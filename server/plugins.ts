/** The built-in plugins, in no particular order (the kernel orders them by before/after). */
import type { PluginDef } from '../core/plugin.js';
import type { OptionOwner } from '../core/config.js';
import { serverOptions } from './options.js';
import graphql from '../plugins/graphql/index.js';
import metadataHistory from '../plugins/metadata-history/index.js';
import graphqlWs from '../plugins/graphql-ws/index.js';
import database from '../plugins/database/index.js';
import postgres, { defaultSource } from '../plugins/postgres/index.js';
import eventTriggers from '../plugins/event-triggers/index.js';
import scheduledTriggers from '../plugins/scheduled-triggers/index.js';
import queryCollections from '../plugins/query-collections/index.js';
import apiLimits from '../plugins/api-limits/index.js';
import authJwt from '../plugins/auth-jwt/index.js';
import authWebhook from '../plugins/auth-webhook/index.js';
import restEndpoints from '../plugins/rest-endpoints/index.js';
import metrics from '../plugins/metrics/index.js';
import consolePlugin from '../plugins/console/index.js';
import inheritedRoles from '../plugins/inherited-roles/index.js';
import introspectionOptions from '../plugins/introspection-options/index.js';
import actions from '../plugins/actions/index.js';
import webhookTransforms from '../plugins/webhook-transforms/index.js';
import remoteSchemas from '../plugins/remote-schemas/index.js';
import mssql from '../plugins/mssql/index.js';
import bigquery from '../plugins/bigquery/index.js';

export const builtinPlugins: PluginDef[] = [graphql, metadataHistory, graphqlWs, database, postgres, eventTriggers, scheduledTriggers, queryCollections, restEndpoints, webhookTransforms, actions, apiLimits, authJwt, authWebhook, metrics, consolePlugin, inheritedRoles, introspectionOptions, remoteSchemas, mssql, bigquery];
export { defaultSource };

/** Every option the server reads: its own, then the plugins' (loadConfig, --help). */
export const builtinOptions: OptionOwner[] = [serverOptions, ...builtinPlugins];
