import { API_DRAIN_MS, startApiServer, stopApiServer } from './api-server';
import { runStandalone } from './standalone';

/** The API alone (docker-compose `api`). */
runStandalone('API', 'gensvc-api', async (services, shutdown) => {
  const app = await startApiServer(services);
  shutdown.add('API', () => stopApiServer(app), { timeoutMs: API_DRAIN_MS + 1_000 });
  return `API listening on ${services.publicBaseUrl}`;
});
