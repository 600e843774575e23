package io.unitycatalog.server.utils;

public class VersionUtils {
  public static String VERSION = "0.6.0";
}
