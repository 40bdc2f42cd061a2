// V8 settings every service process starts with (decision 0145). They must be on node's command line
// (or NODE_OPTIONS): the main thread's heap is sized when the process starts, before any config is
// read. The Dockerfile's NODE_OPTIONS and `npm start` carry the same flags; a unit test holds them equal.

/**
 * Each V8 isolate (the main thread and every workflow thread) lets its young generation grow with
 * the allocation rate, up to 64 MB semi-spaces on a 24 GB machine: under 100 clients that
 * was 128 MB of new space per isolate, two thirds of the service's PSS growth under load, for
 * objects that live less than a request. 8 MB semi-spaces keep it at 16 MB each.
 */
export const MAX_SEMI_SPACE_MB = 8;

export const SERVICE_NODE_FLAGS: readonly string[] = [`--max-semi-space-size=${MAX_SEMI_SPACE_MB}`];
