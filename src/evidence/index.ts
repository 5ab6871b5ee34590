/** Runtime evidence: readers for a PyTorch/XLA run's output, mapping to the workspace, runtime findings. Pure. */
export * from './read';
export * from './map';
export * from './findings';
export * from './runs';
export * from './steps';
