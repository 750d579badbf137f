/**
 * The demo extension's fixed id. The `key` in demo/manifest.json makes Chrome give the demo this id wherever
 * it is loaded from, so the installer can allow its origin by default and the end-to-end test can find it.
 * demo/EXTENSION_ID.txt holds the same id for tools that don't read TypeScript; test/demo.test.ts checks that
 * the key, this constant and that file agree.
 */
export const DEMO_EXTENSION_ID = "pahabgfbcdcnaidcniaebibdihehiphn";
