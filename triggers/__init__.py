"""What starts runs without a person typing their inputs: GitHub webhooks (pushes, pull requests,
deployments), the maintenance schedule and "Check tests now"."""
