/**
 * Imported first by server/main.ts, before any module that imports graphql: graphql-js decides
 * at load time, from NODE_ENV, whether its `instanceof` checks also look for a second copy of
 * the library (a development aid that costs about a tenth of building a large role's schema).
 * The server runs in production mode unless NODE_ENV says otherwise; tests, which do not go
 * through main.ts, keep the development checks.
 */
process.env.NODE_ENV ??= 'production';
