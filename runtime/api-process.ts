import { startApiServer } from './api-server';
import { runStandalone } from './standalone';

/** The API alone (docker-compose `api`). */
runStandalone('API', async (services, shutdown) => {
  const app = await startApiServer(services);
  shutdown.add('API', () => app.close());
  return `API listening on ${services.publicBaseUrl}`;
});
