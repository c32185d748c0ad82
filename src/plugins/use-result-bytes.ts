import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { jsonBytes } from '../json-bytes.js';

/**
 * GraphQL answers encoded by jsonBytes (src/json-bytes.ts) rather than as one JSON.stringify string: yoga
 * serialises a result with the result's own `stringify` when it has one (the hook graphql-jit's serializers use),
 * and a Response takes bytes as readily as text. A large answer with text outside Latin-1 (connection names with
 * "–") cost yoga's string about 1.7 ms to measure and write again (Buffer.byteLength, then the socket's UTF-8
 * write) on top of stringifying; as bytes it is encoded once. Streams (SSE) interpolate the same bytes as text.
 */
export function useResultBytes(): Plugin {
  return {
    onResultProcess({ result }) {
      if (Array.isArray(result) || isAsyncIterable(result) || result === null || typeof result !== 'object') return;
      // Not enumerable: a copy of the result (yoga's, without internal extensions) is what gets written.
      Object.defineProperty(result, 'stringify', { value: jsonBytes, configurable: true, writable: true });
    },
  };
}
