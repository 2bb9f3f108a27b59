/** The topic a workflow run streams on (agent text deltas, tool calls, finish). */
export const runTopic = (workflowId: string, executionId: string) => `workflow/${workflowId}/${executionId}`;
