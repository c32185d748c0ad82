// rate-limiter-flexible's index requires every one of its two dozen stores (Mongo, MySQL, Etcd, …) and their
// helpers; auth/budget-stores.ts imports the two it uses by their paths instead, typed as the index types them.

declare module 'rate-limiter-flexible/lib/RateLimiterMemory.js' {
  export { RateLimiterMemory as default } from 'rate-limiter-flexible';
}

declare module 'rate-limiter-flexible/lib/RateLimiterRedis.js' {
  export { RateLimiterRedis as default } from 'rate-limiter-flexible';
}

declare module 'rate-limiter-flexible/lib/RateLimiterRes.js' {
  export { RateLimiterRes as default } from 'rate-limiter-flexible';
}
