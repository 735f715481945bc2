public enum RelayTool {}
