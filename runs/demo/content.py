"""Files of the two demo repositories `make run` creates: a small web app (Express API +
React pages) and a small Expo mobile app. The tests use them as realistic samples too."""

DEMO_WEB = {
    "README.md": """# Acme Tasks (AMTP demo)

A tiny task tracker: an Express API under `/api` and a React front end.

    npm install && npm run build && npm start   # serves everything on http://localhost:3000
""",
    "package.json": """{
  "name": "acme-tasks",
  "private": true,
  "scripts": {"dev": "vite", "build": "vite build", "start": "node server/index.js"},
  "dependencies": {
    "express": "^4.19.2",
    "react": "^18.3.1",
    "react-dom": "^18.3.1",
    "react-router-dom": "^6.23.1"
  },
  "devDependencies": {"vite": "^5.2.11", "@vitejs/plugin-react": "^4.3.0"}
}
""",
    "index.html": '<!doctype html><html><head><title>Acme Tasks</title></head><body><div id="root"></div><script type="module" src="/src/main.jsx"></script></body></html>\n',
    "server/index.js": """const path = require('path');
const express = require('express');
const tasks = require('./routes/tasks');

const app = express();
app.use(express.json());
app.get('/api/health', (req, res) => res.json({ ok: true }));
app.use('/api/tasks', tasks);
app.use(express.static(path.join(__dirname, '..', 'dist')));
app.get('*', (req, res) => res.sendFile(path.join(__dirname, '..', 'dist', 'index.html')));

app.listen(process.env.PORT || 3000);
""",
    "server/routes/tasks.js": """const express = require('express');
const router = express.Router();
let tasks = [{ id: 1, title: 'Write tests', done: false }];

router.get('/', (req, res) => res.json(tasks));
router.get('/:taskId', (req, res) => {
  const task = tasks.find((t) => t.id === Number(req.params.taskId));
  if (!task) return res.status(404).json({ error: 'task not found' });
  res.json(task);
});
router.post('/', (req, res) => {
  if (typeof req.body.title !== 'string') return res.status(400).json({ error: 'title required' });
  const task = { id: Date.now(), title: req.body.title, done: false };
  tasks.push(task);
  res.status(201).json(task);
});
router.patch('/:taskId', (req, res) => {
  const task = tasks.find((t) => t.id === Number(req.params.taskId));
  if (!task) return res.status(404).json({ error: 'task not found' });
  Object.assign(task, req.body);
  res.json(task);
});
router.delete('/:taskId', (req, res) => {
  tasks = tasks.filter((t) => t.id !== Number(req.params.taskId));
  res.status(204).end();
});

module.exports = router;
""",
    "src/main.jsx": """import React from 'react';
import ReactDOM from 'react-dom/client';
import { BrowserRouter } from 'react-router-dom';
import App from './App';

ReactDOM.createRoot(document.getElementById('root')).render(<BrowserRouter><App /></BrowserRouter>);
""",
    "src/App.jsx": """import { Link, Routes, Route } from 'react-router-dom';
import Home from './pages/Home';
import TaskList from './pages/TaskList';
import TaskDetail from './pages/TaskDetail';
import About from './pages/About';

export default function App() {
  return (
    <>
      <nav><Link to="/">Home</Link> <Link to="/tasks">Tasks</Link> <Link to="/about">About</Link></nav>
      <Routes>
        <Route path="/" element={<Home />} />
        <Route path="/tasks" element={<TaskList />} />
        <Route path="/tasks/:taskId" element={<TaskDetail />} />
        <Route path="/about" element={<About />} />
      </Routes>
    </>
  );
}
""",
    "src/pages/Home.jsx": "export default function Home() { return <h1>Acme Tasks</h1>; }\n",
    "src/pages/TaskList.jsx": """import { useEffect, useState } from 'react';
import { Link } from 'react-router-dom';

export default function TaskList() {
  const [tasks, setTasks] = useState([]);
  useEffect(() => { fetch('/api/tasks').then((r) => r.json()).then(setTasks); }, []);
  return (
    <>
      <h1>All tasks</h1>
      <ul>{tasks.map((t) => <li key={t.id}><Link to={`/tasks/${t.id}`}>{t.title}</Link></li>)}</ul>
    </>
  );
}
""",
    "src/pages/TaskDetail.jsx": "export default function TaskDetail() { return <h1>Task</h1>; }\n",
    "src/pages/About.jsx": "export default function About() { return <h1>About Acme Tasks</h1>; }\n",
}

# How the demo web app builds and starts, in the form a team's own dev container says it: AMTP
# finds it (verification/boot/recipe.py), installs and builds in the sandbox, and starts the real app
# for the demo run. Only `make run`'s demo repository carries it (runs/demo/__init__.py): the tests' samples
# stay as they are.
DEMO_WEB_RECIPE = {
    ".devcontainer/devcontainer.json": """{
  "name": "Acme Tasks",
  "image": "mcr.microsoft.com/devcontainers/javascript-node:20",
  // install the dependencies and build the React pages into dist/, which Express serves
  "postCreateCommand": "npm install --no-audit --no-fund && npm run build",
  "postStartCommand": "npm start",
  "forwardPorts": [3000]
}
""",
    # the React plugin: without it Vite compiles JSX to React.createElement, and the pages that
    # do not import React fail at their first render
    "vite.config.js": """import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

export default defineConfig({ plugins: [react()] });
""",
}

DEMO_MOBILE = {
    "README.md": """# Acme Habits (AMTP demo)

A small Expo habit tracker built with expo-router.

    npm install && npx expo run:android   # or run:ios
""",
    "package.json": """{
  "name": "acme-habits",
  "main": "expo-router/entry",
  "scripts": {"start": "expo start", "android": "expo run:android", "ios": "expo run:ios"},
  "dependencies": {
    "expo": "~51.0.8",
    "expo-router": "~3.5.14",
    "react": "18.2.0",
    "react-native": "0.74.1"
  }
}
""",
    "app.json": """{
  "expo": {
    "name": "Acme Habits",
    "slug": "acme-habits",
    "scheme": "acmehabits",
    "ios": {"bundleIdentifier": "com.acme.habits"},
    "android": {"package": "com.acme.habits"}
  }
}
""",
    "app/_layout.tsx": """import { Stack } from 'expo-router';

export default function RootLayout() {
  return <Stack screenOptions={{ headerShown: false }} />;
}
""",
    "app/(tabs)/_layout.tsx": """import { Tabs } from 'expo-router';

export default function TabLayout() {
  return (
    <Tabs>
      <Tabs.Screen name="index" options={{ title: 'Today' }} />
      <Tabs.Screen name="stats" options={{ title: 'Stats' }} />
      <Tabs.Screen name="settings" options={{ title: 'Settings' }} />
    </Tabs>
  );
}
""",
    "app/(tabs)/index.tsx": """import { FlatList, Text, View } from 'react-native';
import { HABITS } from '../../lib/habits';

export default function Today() {
  return (
    <View>
      <Text>Today's habits</Text>
      <FlatList data={HABITS} renderItem={({ item }) => <Text>{item.name}</Text>} />
    </View>
  );
}
""",
    "app/(tabs)/stats.tsx": "import { Text } from 'react-native';\nexport default function Stats() { return <Text>Your streaks</Text>; }\n",
    "app/(tabs)/settings.tsx": "import { Text } from 'react-native';\nexport default function Settings() { return <Text>Reminders</Text>; }\n",
    "app/habit/[id].tsx": """import { useLocalSearchParams } from 'expo-router';
import { Text } from 'react-native';

export default function Habit() {
  const { id } = useLocalSearchParams();
  return <Text>Habit {id}</Text>;
}
""",
    "lib/habits.ts": "export const HABITS = [{ id: '1', name: 'Drink water' }, { id: '2', name: 'Read' }];\n",
}
