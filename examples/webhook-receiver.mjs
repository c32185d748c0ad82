import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';
const webhook = new Webhook(process.env.WEBHOOK_SECRET);
createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk)).on('end', () => {
    try { const { type, data } = webhook.verify(body, req.headers); console.log(type, data.id, data.status); res.writeHead(204).end(); }
    catch (error) { console.error('refused:', error.message); res.writeHead(400).end(); }
  });
}).listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
