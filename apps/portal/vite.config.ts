import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

/** Where `vite` (dev) forwards API calls. The built portal is served by the API itself, same origin. */
const apiTarget = process.env.TRIBUTARY_API ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
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
