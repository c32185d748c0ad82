// The part of autocannon's programmatic API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      amount?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      timeout?: number;
      /** Cycled through by every connection; `onResponse` sees each answer to its request. */
      requests?: Array<{
        method?: string;
        path?: string;
        headers?: Record<string, string>;
        body?: string;
        /** Builds the request from the connection's context (which starts empty on each pass through the list). */
        setupRequest?: (request: object, context: Record<string, unknown>) => object;
        onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
      }>;
    }
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p99: number;
    }
    interface Result {
      duration: number;
      requests: Histogram & { sent: number };
      latency: Histogram & { totalCount: number };
      throughput: Histogram;
      errors: number;
      timeouts: number;
      non2xx: number;
      '2xx': number;
      statusCodeStats: Record<string, { count: number }>;
    }
  }
  function autocannon(options: autocannon.Options): Promise<autocannon.Result>;
  export = autocannon;
}
