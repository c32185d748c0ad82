import { lexicographicSortSchema } from 'graphql';
import { builder } from './builder.js';
import { handingOverListPlans } from './list.js';
import './scalars.js';
import './category.js';
import './application.js';
import './connection.js';
import './sync.js';
import './access.js';
import './oauth-clients.js';
import './oauth-applications.js';
import './sync-runs.js';
import './live.js';
import './webhooks.js';
import './sync-stats.js';
import './members.js';
import './activity.js';
import './identity-provider.js';

/** The whole GraphQL schema; domain modules register their types on import. */
export const schema = handingOverListPlans(lexicographicSortSchema(builder.toSchema()));
