import { Counter, Gauge, type Registry } from 'prom-client';
import { END_REASONS, RESOURCE_NAMES, type Governor } from '../governor/governor.js';

/**
 * What the governor's leases hold: leases held and waiting per resource, refusals, and ends by reason. A lease
 * ended as `outlived` was found held by an owner that had already ended: a release path missed it (a leak, shown).
 */
export function registerGovernorMetrics(registry: Registry, governor: Governor): void {
  new Gauge({
    name: 'governor_leases',
    help: 'Leases of each resource the governor leases: held now, tenants holding them, requests waiting for one',
    labelNames: ['resource', 'state'] as const,
    registers: [registry],
    collect() {
      for (const resource of RESOURCE_NAMES) {
        const stats = governor.stats(resource);
        this.set({ resource, state: 'held' }, stats.held);
        this.set({ resource, state: 'tenants' }, stats.tenants);
        this.set({ resource, state: 'waiting' }, stats.waiting);
      }
    },
  });
  new Counter({
    name: 'governor_lease_ends_total',
    help: 'Leases ended, by resource and reason (outlived: found held after its owner ended, a missed release)',
    labelNames: ['resource', 'reason'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const resource of RESOURCE_NAMES) {
        const { ended } = governor.stats(resource);
        for (const reason of END_REASONS) this.inc({ resource, reason }, ended[reason]);
      }
    },
  });
  new Counter({
    name: 'governor_refusals_total',
    help: 'Leases refused (429 or 503), by resource',
    labelNames: ['resource'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const resource of RESOURCE_NAMES) this.inc({ resource }, governor.stats(resource).refused);
    },
  });
}
