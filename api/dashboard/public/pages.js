// The dashboard's pages, one module each in pages/, by the name the server gives them in the boot
// data. Each reads and changes the account through /dashboard/api (the same services as the API's
// doors) and follows it live where things move.
import { Audit } from './pages/audit.js';
import { Batches } from './pages/batches.js';
import { Billing } from './pages/billing.js';
import { Customers } from './pages/customers.js';
import { Generations } from './pages/generations.js';
import { Keys } from './pages/keys.js';
import { Overview } from './pages/overview.js';
import { Playground } from './pages/playground.js';
import { Team } from './pages/team.js';
import { Usage } from './pages/usage.js';
import { Webhooks } from './pages/webhooks.js';

export const PAGES = {
  overview: Overview,
  generations: Generations,
  batches: Batches,
  keys: Keys,
  usage: Usage,
  webhooks: Webhooks,
  playground: Playground,
  billing: Billing,
  customers: Customers,
  team: Team,
  audit: Audit,
};
