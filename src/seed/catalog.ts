import type { Database } from '../db/client.js';
import { CATEGORY_KINDS, catalogId, type CategorySlug } from '../domain/category-kinds.js';
import type { ConnectionKind } from '../domain/connection-members.js';

/** A category's kind (what its applications do) comes from src/domain/category-kinds.ts. */
interface CatalogCategory {
  id: string;
  slug: CategorySlug;
  name: string;
  description: string;
  sortOrder: number;
  kind: ConnectionKind;
}

// Type aliases, not interfaces: Prisma's JSON input type needs an implicit index signature.
type CatalogFeature = {
  name: string;
  /** HTML. */
  content: string;
  image_urls: string[];
};

/** Stored as-is in `applications.features`; the snake_case keys are the API's shape. */
type CatalogFeatures = {
  title: string;
  features: CatalogFeature[];
};

export interface CatalogApplication {
  id: string;
  slug: string;
  name: string;
  description: string;
  logoUrl: string;
  keywords: string[];
  features: CatalogFeatures;
  additionalInformation: string;
  categoryId: string;
}

const CATEGORY_DATA: Omit<CatalogCategory, 'id' | 'sortOrder' | 'kind'>[] = [
  {
    slug: 'smart-locks',
    name: 'Smart Locks',
    description: 'Keyless door locks for rooms and apartments: issue and revoke digital keys per stay.',
  },
  {
    slug: 'access-control',
    name: 'Access Control',
    description: 'Building and staff access systems: entrances, elevators, back-of-house doors.',
  },
  {
    slug: 'property-management',
    name: 'Property Management',
    description: 'Property management systems (PMS): reservations, guests, rooms and folios.',
  },
  {
    slug: 'channel-management',
    name: 'Channel Management',
    description: 'Distribute rates and availability to booking channels and keep inventory in step.',
  },
  {
    slug: 'payments',
    name: 'Payments',
    description: 'Card and wallet payments, pre-authorisations, refunds and payouts.',
  },
  {
    slug: 'accounting',
    name: 'Accounting',
    description: 'Export revenue, invoices and payouts to the general ledger.',
  },
  {
    slug: 'messaging',
    name: 'Messaging',
    description: 'Team chat and guest messaging: alerts, check-in notifications and daily reports.',
  },
  {
    slug: 'analytics',
    name: 'Analytics',
    description: 'Web and product analytics for booking sites and guest apps.',
  },
];

export const CATEGORIES: readonly CatalogCategory[] = CATEGORY_DATA.map((category, index) => ({
  ...category,
  id: catalogId('cat', category.slug),
  kind: CATEGORY_KINDS[category.slug],
  sortOrder: (index + 1) * 10,
}));

function categoryBySlug(slug: string): CatalogCategory {
  const category = CATEGORIES.find((c) => c.slug === slug);
  if (!category) throw new Error(`unknown catalog category "${slug}"`);
  return category;
}

interface AppSource {
  slug: string;
  name: string;
  category: string;
  description: string;
  keywords: string[];
  /** One thing this product does that its category peers do not; becomes its first feature. */
  highlight: { name: string; text: string; points: string[] };
}

const APP_SOURCES: AppSource[] = [
  {
    slug: 'nuki-smart-lock',
    name: 'Nuki Smart Lock',
    category: 'smart-locks',
    description: 'Retrofit smart lock: guests open their apartment door with a digital key on their phone.',
    keywords: ['smart lock', 'bluetooth', '"keyless" entry', 'apartments'],
    highlight: {
      name: 'Digital keys per reservation',
      text: 'A key is issued when a booking is confirmed and expires at check-out.',
      points: ['Valid from check-in time to check-out time', 'Revoked automatically on cancellation'],
    },
  },
  {
    slug: 'igloohome',
    name: 'Igloohome Smart Deadbolt',
    category: 'smart-locks',
    description: 'Offline PIN-code deadbolts: codes are generated without the lock being online.',
    keywords: ['pin codes', 'offline', "guest's app", 'deadbolt'],
    highlight: {
      name: 'Offline PIN codes',
      text: 'Time-bound PIN codes work even when the lock has no connectivity.',
      points: ['Hourly or daily validity windows', 'One-time codes for cleaning staff'],
    },
  },
  {
    slug: 'ttlock-cloud',
    name: 'TTLock Cloud',
    category: 'smart-locks',
    description: 'Cloud platform for a wide range of OEM smart locks and gateways.',
    keywords: ['smart lock', 'gateway', 'oem', 'ic cards'],
    highlight: {
      name: 'Gateway status',
      text: 'Battery and gateway health are synchronized so low batteries are flagged before a guest arrives.',
      points: ['Battery level per lock', 'Offline gateway alerts'],
    },
  },
  {
    slug: 'salto-ks',
    name: 'Salto KS',
    category: 'access-control',
    description: 'Cloud-based access control for entrances, staff areas and shared spaces.',
    keywords: ['access control', 'keys as a service', 'nfc', 'staff access'],
    highlight: {
      name: 'Staff access groups',
      text: 'Access groups mirror staff roles, so housekeeping, maintenance and front desk open only their doors.',
      points: ['Role-based access groups', 'Access log export'],
    },
  },
  {
    slug: 'brivo-access',
    name: 'Brivo Access',
    category: 'access-control',
    description: 'Enterprise access control with mobile credentials and video verification.',
    keywords: ['mobile credentials', 'multi-site', '"tap to unlock"'],
    highlight: {
      name: 'Mobile credentials',
      text: 'Guests and staff receive mobile credentials instead of plastic cards.',
      points: ['Wallet passes', 'Instant revocation'],
    },
  },
  {
    slug: 'kisi',
    name: 'Kisi',
    category: 'access-control',
    description: 'Access control for co-living and serviced apartments, managed from one dashboard.',
    keywords: ['co-living', 'door readers', 'visitor management'],
    highlight: {
      name: 'Visitor passes',
      text: 'Visitors get temporary passes for the main entrance and shared areas.',
      points: ['Time-limited passes', 'Entrance events per visitor'],
    },
  },
  {
    slug: 'mews-pms',
    name: 'Mews PMS',
    category: 'property-management',
    description: 'Cloud property management system for hotels, hostels and serviced apartments.',
    keywords: ['pms', 'reservations', 'folios', 'hotel'],
    highlight: {
      name: 'Reservation sync',
      text: 'New, modified and cancelled reservations flow in within minutes.',
      points: ['Room assignments', 'Guest profiles with consent flags'],
    },
  },
  {
    slug: 'apaleo',
    name: 'Apaleo',
    category: 'property-management',
    description: 'API-first property management platform for multi-property groups.',
    keywords: ['pms', 'api-first', 'multi-property'],
    highlight: {
      name: 'Multi-property accounts',
      text: 'One connection covers every property in the account, each mapped separately.',
      points: ['Per-property mapping', 'Unit groups and rate plans'],
    },
  },
  {
    slug: 'cloudbeds',
    name: 'Cloudbeds',
    category: 'property-management',
    description: 'All-in-one hospitality platform for independent hotels and hostels.',
    keywords: ['pms', 'hostels', "owner's dashboard"],
    highlight: {
      name: 'Housekeeping status',
      text: 'Room status changes (dirty, clean, inspected) are synchronized both ways.',
      points: ['Two-way room status', 'Out-of-order blocks'],
    },
  },
  {
    slug: 'siteminder',
    name: 'SiteMinder',
    category: 'channel-management',
    description: 'Channel manager distributing rates and availability to hundreds of booking sites.',
    keywords: ['channel manager', 'ota', 'rates', 'availability'],
    highlight: {
      name: 'Rate and availability push',
      text: 'Inventory changes are pushed to every connected channel within seconds.',
      points: ['Stop-sell per channel', 'Minimum stay restrictions'],
    },
  },
  {
    slug: 'channex',
    name: 'Channex',
    category: 'channel-management',
    description: 'White-label channel manager API for vacation rentals and hotels.',
    keywords: ['channel manager', 'vacation rentals', 'white label'],
    highlight: {
      name: 'Booking revisions',
      text: 'Every booking revision from a channel is recorded and acknowledged.',
      points: ['Revision history', 'Automatic acknowledgement'],
    },
  },
  {
    slug: 'rategain',
    name: 'RateGain',
    category: 'channel-management',
    description: 'Distribution and rate intelligence for hotel chains.',
    keywords: ['rate shopping', 'distribution', 'parity'],
    highlight: {
      name: 'Rate parity checks',
      text: 'Channel rates are compared with the public rate and mismatches reported.',
      points: ['Daily parity report', 'Alerts on undercutting'],
    },
  },
  {
    slug: 'stripe',
    name: 'Stripe',
    category: 'payments',
    description: 'Online payments: cards, wallets and local payment methods, with payouts to your bank.',
    keywords: ['cards', 'sepa', '"instant" payouts', 'apple pay'],
    highlight: {
      name: 'Pre-authorisations',
      text: 'Deposits are pre-authorised at booking and captured or released at check-out.',
      points: ['Automatic capture on check-out', 'Release on cancellation'],
    },
  },
  {
    slug: 'adyen',
    name: 'Adyen',
    category: 'payments',
    description: 'Unified commerce payments for online, terminal and in-app.',
    keywords: ['terminals', 'unified commerce', 'tokenization'],
    highlight: {
      name: 'Terminal payments',
      text: 'Front-desk terminal payments are matched to the guest folio.',
      points: ['Terminal-to-folio matching', 'Card tokens for incidentals'],
    },
  },
  {
    slug: 'paypal',
    name: 'PayPal',
    category: 'payments',
    description: 'Wallet payments and buyer protection for direct bookings.',
    keywords: ['wallet', 'pay later', "buyer's protection"],
    highlight: {
      name: 'Wallet checkout',
      text: 'Guests pay direct bookings with their PayPal wallet.',
      points: ['Pay later options', 'Refunds synced back'],
    },
  },
  {
    slug: 'xero',
    name: 'Xero',
    category: 'accounting',
    description: 'Cloud accounting: invoices, bank reconciliation and revenue journals.',
    keywords: ['accounting', 'invoices', 'ledger'],
    highlight: {
      name: 'Daily revenue journals',
      text: 'Revenue is posted as one journal per day and property.',
      points: ['Account mapping per revenue type', 'VAT codes'],
    },
  },
  {
    slug: 'quickbooks-online',
    name: 'QuickBooks Online',
    category: 'accounting',
    description: 'Small-business accounting with invoices, expenses and reports.',
    keywords: ['accounting', 'invoices', 'reports'],
    highlight: {
      name: 'Invoice export',
      text: 'Guest invoices are exported with their line items and taxes.',
      points: ['Customer matching', 'Tax rate mapping'],
    },
  },
  {
    slug: 'datev-connect',
    name: 'DATEV Connect',
    category: 'accounting',
    description: 'Bookkeeping export in the format German tax advisors expect.',
    keywords: ['datev', 'tax advisor', '"Buchungsstapel" export'],
    highlight: {
      name: 'Booking batches',
      text: 'Monthly booking batches are generated for the tax advisor.',
      points: ['SKR03 and SKR04 charts', 'Cost centres per property'],
    },
  },
  {
    slug: 'slack',
    name: 'Slack',
    category: 'messaging',
    description: 'Team chat: alerts for arrivals, failed payments and lock battery warnings.',
    keywords: ['chat', 'alerts', 'channels', "team's inbox"],
    highlight: {
      name: 'Channel alerts',
      text: 'Operational alerts are posted to the channel of your choice, threaded per reservation.',
      points: ['Threads per reservation', '@mentions for on-call staff'],
    },
  },
  {
    slug: 'microsoft-teams',
    name: 'Microsoft Teams',
    category: 'messaging',
    description: 'Notifications and daily reports in Teams channels.',
    keywords: ['chat', 'notifications', 'office 365'],
    highlight: {
      name: 'Daily reports',
      text: 'An occupancy and arrivals report is posted every morning.',
      points: ['Configurable report time', 'Adaptive cards'],
    },
  },
  {
    slug: 'whatsapp-business',
    name: 'WhatsApp Business',
    category: 'messaging',
    description: 'Guest messaging: check-in instructions and door codes over WhatsApp.',
    keywords: ['guest messaging', 'templates', 'check-in'],
    highlight: {
      name: 'Template messages',
      text: 'Approved message templates deliver check-in instructions before arrival.',
      points: ['Multilingual templates', 'Delivery receipts'],
    },
  },
  {
    slug: 'google-analytics',
    name: 'Google Analytics',
    category: 'analytics',
    description: 'Booking funnel analytics and conversion tracking for the direct booking site.',
    keywords: ['ga4', 'conversion tracking', 'funnels'],
    highlight: {
      name: 'E-commerce events',
      text: 'Completed bookings are sent as purchase events with revenue.',
      points: ['Server-side purchase events', 'Consent mode'],
    },
  },
  {
    slug: 'mixpanel',
    name: 'Mixpanel',
    category: 'analytics',
    description: 'Product analytics for the guest app: retention, funnels and cohorts.',
    keywords: ['product analytics', 'cohorts', "guest's app"],
    highlight: {
      name: 'Guest app events',
      text: 'Door openings and check-ins become events for retention analysis.',
      points: ['Cohorts by property', 'Anonymous profiles'],
    },
  },
  {
    slug: 'plausible-analytics',
    name: 'Plausible Analytics',
    category: 'analytics',
    description: 'Privacy-friendly, cookie-less web analytics.',
    keywords: ['privacy', 'cookie-less', 'gdpr'],
    highlight: {
      name: 'Cookie-less tracking',
      text: 'Booking site visits are measured without cookies or personal data.',
      points: ['No consent banner needed', 'Goal conversions'],
    },
  },
];

/** The second and third feature every application of a kind shares, in the application's own words. */
const KIND_FEATURES: Record<ConnectionKind, (name: string) => { name: string; text: string; points: string[] }[]> = {
  lock: (name) => [
    {
      name: 'Access events',
      text: `Lock and unlock events from ${name} appear in the sync history.`,
      points: ['Who opened which door, and when', 'Failed attempts flagged'],
    },
  ],
  pms: (name) => [
    {
      name: 'Property mapping',
      text: `Map ${name} properties and room types to your locations once; every sync follows the mapping.`,
      points: ['Room type mapping', 'Incremental syncs every few minutes'],
    },
  ],
  payments: (name) => [
    {
      name: 'Payouts and fees',
      text: `Payouts and processing fees from ${name} are reconciled against bookings.`,
      points: ['Fee breakdown per transaction', 'Multi-currency'],
    },
  ],
  accounting: (name) => [
    {
      name: 'Ledger mapping',
      text: `Choose which ${name} accounts receive room revenue, extras and taxes.`,
      points: ['Per-property ledgers', 'Preview before posting'],
    },
  ],
  messaging: (name) => [
    {
      name: 'Quiet hours',
      text: `Non-urgent ${name} notifications wait until the morning.`,
      points: ['Per-channel quiet hours', 'Urgent alerts always delivered'],
    },
  ],
  analytics: (name) => [
    {
      name: 'Privacy controls',
      text: `IP anonymisation and user tracking for ${name} are switched per connection.`,
      points: ['Anonymise IP addresses', 'Opt-out respected'],
    },
  ],
};

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function featureHtml(text: string, points: string[]): string {
  return `<p>${escapeHtml(text)}</p><ul>${points.map((p) => `<li>${escapeHtml(p)}</li>`).join('')}</ul>`;
}

function buildApplication(source: AppSource): CatalogApplication {
  const category = categoryBySlug(source.category);
  const sections = [source.highlight, ...KIND_FEATURES[category.kind](source.name)];
  return {
    id: catalogId('app', source.slug),
    slug: source.slug,
    name: source.name,
    description: source.description,
    logoUrl: `/logos/${source.slug}.svg`,
    keywords: source.keywords,
    features: {
      title: `What the ${source.name} integration does`,
      features: sections.map((section, index) => ({
        name: section.name,
        content: featureHtml(section.text, section.points),
        image_urls: [`https://cdn.example.com/integrations/${source.slug}/feature-${index + 1}.png`],
      })),
    },
    additionalInformation:
      `<p>${escapeHtml(source.name)} is provided by a third party; an account with them is required.</p>` +
      `<p>Setup guide: <a href="https://docs.example.com/integrations/${source.slug}">docs.example.com</a>. ` +
      `Data is synchronized <strong>every 15 minutes</strong> by default.</p>`,
    categoryId: category.id,
  };
}

export const APPLICATIONS: readonly CatalogApplication[] = APP_SOURCES.map(buildApplication);

export function applicationBySlug(slug: string): CatalogApplication {
  const application = APPLICATIONS.find((a) => a.slug === slug);
  if (!application) throw new Error(`unknown catalog application "${slug}"`);
  return application;
}

export function kindOfApplication(application: Pick<CatalogApplication, 'categoryId'>): ConnectionKind {
  const category = CATEGORIES.find((c) => c.id === application.categoryId);
  if (!category) throw new Error(`application category ${application.categoryId} is not in the catalog`);
  return category.kind;
}

/**
 * Inserts the catalog rows that are missing; existing rows (matched by id or slug) are left alone, so this is
 * safe on every start and never overwrites an operator's edits.
 */
export async function seedCatalog(db: Database): Promise<{ categories: number; applications: number }> {
  const categories = await db.prisma.category.createMany({
    data: CATEGORIES.map(({ kind: _kind, ...category }) => category),
    skipDuplicates: true,
  });
  const applications = await db.prisma.application.createMany({
    data: [...APPLICATIONS],
    skipDuplicates: true,
  });
  return { categories: categories.count, applications: applications.count };
}
