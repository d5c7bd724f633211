"""Sample Node web repositories (path → contents): Express, Next.js, React (Vite + router)."""

EXPRESS = {
    "README.md": "# Acme API\n\nREST API for users and orders. Run `npm start`; it listens on 3000.\n",
    "package.json": """{
  "name": "acme-api",
  "version": "1.2.0",
  "main": "src/server.js",
  "scripts": {"start": "node src/server.js", "test": "jest"},
  "dependencies": {"express": "^4.19.2", "cors": "^2.8.5"},
  "devDependencies": {"jest": "^29.7.0", "supertest": "^7.0.0"}
}
""",
    "src/app.js": """const express = require('express');
const cors = require('cors');
const usersRouter = require('./routes/users');
const ordersRouter = require('./routes/orders');

const app = express();
app.use(cors());
app.use(express.json());

app.get('/health', (req, res) => res.json({ status: 'ok' }));
app.use('/api/users', usersRouter);
app.use('/api/orders', ordersRouter);

module.exports = app;
""",
    "src/server.js": """const app = require('./app');
const port = process.env.PORT || 3000;
app.listen(port, () => console.log(`listening on ${port}`));
""",
    "src/routes/users.js": """const express = require('express');
const router = express.Router();
const users = [{ id: 1, name: 'Ada' }];

router.get('/', (req, res) => res.json(users));
router.get('/:id', (req, res) => {
  const user = users.find((u) => u.id === Number(req.params.id));
  return user ? res.json(user) : res.status(404).json({ error: 'not found' });
});
router.post('/', (req, res) => {
  if (!req.body.name) return res.status(400).json({ error: 'name is required' });
  const user = { id: users.length + 1, name: req.body.name };
  users.push(user);
  res.status(201).json(user);
});
router.delete('/:id', (req, res) => res.status(204).end());

module.exports = router;
""",
    "src/routes/orders.js": """const { Router } = require('express');
const axios = require('axios');
const router = Router();

router
  .route('/')
  .get((req, res) => res.json([]))
  .post(async (req, res) => {
    // axios.get is a client call, not a route of this app
    const rates = await axios.get('https://rates.example.com/today');
    res.status(201).json({ rates: rates.data });
  });
router.get('/:orderId', (req, res) => res.json({ id: req.params.orderId }));

module.exports = router;
""",
    "test/users.test.js": """const request = require('supertest');
const app = require('../src/app');

test('lists users', async () => {
  await request(app).get('/api/users').expect(200);
});
""",
    ".env.example": "PORT=3000\n",
    "public/index.html": "<!doctype html><title>Acme API</title><h1>Acme API</h1>\n",
}

NEXTJS = {
    "README.md": "# Acme Store\n\nNext.js 14 storefront. `npm run dev` then open http://localhost:3000.\n",
    "package.json": """{
  "name": "acme-store",
  "private": true,
  "scripts": {"dev": "next dev", "build": "next build", "start": "next start"},
  "dependencies": {"next": "14.2.3", "react": "18.3.1", "react-dom": "18.3.1"},
  "devDependencies": {"typescript": "5.4.5", "@types/react": "18.3.1"}
}
""",
    "next.config.js": "/** @type {import('next').NextConfig} */\nmodule.exports = { reactStrictMode: true };\n",
    "tsconfig.json": '{"compilerOptions": {"strict": true, "jsx": "preserve"}}\n',
    "app/layout.tsx": """export default function RootLayout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
""",
    "app/page.tsx": """export default function Home() {
  return (
    <main>
      <h1>Welcome to Acme</h1>
      <p>Everything you need, delivered.</p>
    </main>
  );
}
""",
    "app/about/page.tsx": """export default function About() {
  return <h1 className="title">About Acme</h1>;
}
""",
    "app/(marketing)/pricing/page.tsx": """export default function Pricing() {
  return <section><h2>Plans</h2></section>;
}
""",
    "app/blog/[slug]/page.tsx": """export default function Post({ params }: { params: { slug: string } }) {
  return <article><h1>{params.slug}</h1></article>;
}
""",
    "app/_components/Nav.tsx": "export function Nav() { return <nav>Acme</nav>; }\n",
    "app/api/products/route.ts": """import { NextResponse } from 'next/server';

export async function GET() {
  return NextResponse.json([{ id: 1, name: 'Anvil' }]);
}

export async function POST(request: Request) {
  const body = await request.json();
  if (!body.name) return NextResponse.json({ error: 'name required' }, { status: 400 });
  return NextResponse.json(body, { status: 201 });
}
""",
    "app/api/products/[id]/route.ts": """import { NextResponse } from 'next/server';

export async function GET(_: Request, { params }: { params: { id: string } }) {
  return NextResponse.json({ id: params.id });
}

export async function DELETE() {
  return new Response(null, { status: 204 });
}
""",
    "pages/legacy/index.tsx": "export default function Legacy() { return <h1>Legacy page</h1>; }\n",
    "pages/api/health.ts": """import type { NextApiRequest, NextApiResponse } from 'next';

export default function handler(req: NextApiRequest, res: NextApiResponse) {
  res.status(200).json({ ok: true });
}
""",
    "pages/_app.tsx": "export default function App({ Component, pageProps }: any) { return <Component {...pageProps} />; }\n",
    "components/Header.tsx": "export function Header() { return <header>Acme</header>; }\n",
}

REACT = {
    "README.md": "# Acme Dashboard\n\nVite + React Router SPA. `npm run dev` serves it on :5173.\n",
    "package.json": """{
  "name": "acme-dashboard",
  "private": true,
  "type": "module",
  "scripts": {"dev": "vite", "build": "vite build"},
  "dependencies": {"react": "^18.3.1", "react-dom": "^18.3.1", "react-router-dom": "^6.23.1"},
  "devDependencies": {"vite": "^5.2.11", "@vitejs/plugin-react": "^4.3.0", "typescript": "^5.4.5"}
}
""",
    "index.html": '<!doctype html><html><body><div id="root"></div><script type="module" src="/src/main.tsx"></script></body></html>\n',
    "vite.config.ts": "import { defineConfig } from 'vite';\nimport react from '@vitejs/plugin-react';\nexport default defineConfig({ plugins: [react()] });\n",
    "src/main.tsx": """import React from 'react';
import ReactDOM from 'react-dom/client';
import { createBrowserRouter, RouterProvider } from 'react-router-dom';
import Layout from './Layout';
import Home from './pages/Home';
import About from './pages/About';
import Product from './pages/Product';

const router = createBrowserRouter([
  {
    path: '/',
    element: <Layout />,
    children: [
      { index: true, element: <Home /> },
      { path: 'about', element: <About /> },
      { path: 'products/:productId', element: <Product /> },
      { path: 'settings', children: [{ path: 'profile', element: <Home /> }] },
    ],
  },
]);

ReactDOM.createRoot(document.getElementById('root')!).render(<RouterProvider router={router} />);
""",
    "src/Layout.tsx": """import { Outlet, Link } from 'react-router-dom';
import AdminRoutes from './AdminRoutes';

export default function Layout() {
  return (<div><nav><Link to="/about">About</Link></nav><Outlet /><AdminRoutes /></div>);
}
""",
    "src/AdminRoutes.tsx": """import { Routes, Route } from 'react-router-dom';
import AdminHome from './pages/AdminHome';

export default function AdminRoutes() {
  return (
    <Routes>
      <Route path="/admin" element={<AdminHome />}>
        <Route path="users" element={<AdminHome title={"Users"} />} />
      </Route>
    </Routes>
  );
}
""",
    "src/pages/Home.tsx": "export default function Home() { return <h1>Dashboard</h1>; }\n",
    "src/pages/About.tsx": "export default function About() { return <h1>About the dashboard</h1>; }\n",
    "src/pages/Product.tsx": "export default function Product() { return <h2>Product</h2>; }\n",
    "src/pages/AdminHome.tsx": "export default function AdminHome() { return <h1>Admin</h1>; }\n",
    "src/api/client.ts": "import axios from 'axios';\nexport const api = axios.create();\nexport const load = () => api.get('/api/stats');\n",
}
