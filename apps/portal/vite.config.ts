import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

/** Where `vite` (dev) forwards API calls. The built portal is served by the API itself, same origin. */
const apiTarget = process.env.TRIBUTARY_API ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
  resolve: {
    // The shared package's runtime entry is CommonJS for Node; the browser bundle uses its sources.
    alias: {
      '@tributary/shared': fileURLToPath(new URL('../../packages/shared/src/index.ts', import.meta.url)),
    },
  },
  server: {
    proxy: {
      '/api': apiTarget,
      '/metrics': apiTarget,
    },
  },
  build: {
    outDir: 'dist',
  },
});
