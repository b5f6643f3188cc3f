package localcluster

// ListenInNetns lets the live tests open a listener in a network namespace
// of their own the way the world hosts do.
var ListenInNetns = listenInNetns
