export { generation } from './generation';
export { webhookDelivery } from './webhook-delivery';
