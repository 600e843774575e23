package io.unitycatalog.server.auth.decorator;

import com.linecorp.armeria.server.annotation.Param;
import io.unitycatalog.server.auth.annotation.AuthorizeKey;
import io.unitycatalog.server.auth.annotation.AuthorizeResourceKey;
import io.unitycatalog.server.model.SecurableType;
import java.lang.reflect.Parameter;
import java.util.Optional;
import lombok.Builder;
import lombok.Getter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Locator for authorization parameters extracted from request URL parameter or payloads.
 *
 * <p>It finds out values from both {@link AuthorizeKey} and {@link AuthorizeResourceKey}
 * annotations.
 *
 * <p>Example: For {@code @AuthorizeKey(key = "operation")}, this locator would extract the
 * "operation" field value from the request payload and make it available as "#operation" in the
 * SpEL authorization expression.
 *
 * @see AuthorizeKey
 * @see AuthorizeResourceKey
 */
@Builder
@Getter
public class AuthorizeKeyLocator {
  private static final Logger LOGGER = LoggerFactory.getLogger(AuthorizeKeyLocator.class);

  public enum Source {
    SYSTEM,
    PARAM,
    PAYLOAD;
  }

  // For AuthorizeKey, type is empty; For AuthorizeResourceKey, type is the resource securable type.
  private Optional<SecurableType> type;
  private Source source;
  private String key;

  /**
   * Extracts the variable name from a key. For resources, returns their securable type as variable
   * name. e.g. "external_location" For other keys, returns the key name in annotated parameters or
   * the last segment of the payload parameter. e.g. "config.operation" returns "operation".
   *
   * <p>Hyphens in the key are mapped to underscores so kebab-case payload fields (such as Delta
   * REST Catalog's {@code table-type}) form valid SpEL identifiers like {@code #table_type}. The
   * payload lookup still uses the original key verbatim; this transformation affects only the SpEL
   * variable name.
   */
  public String getVariableName() {
    if (type.isPresent()) {
      return type.get().getValue();
    }
    int lastDot = key.lastIndexOf('.');
    String name = lastDot >= 0 ? key.substring(lastDot + 1) : key;
    return name.replace('-', '_');
  }

  public static AuthorizeKeyLocator from(AuthorizeResourceKey key, Parameter parameter) {
    return from(Optional.of(key.value()), key.key(), parameter);
  }

  public static AuthorizeKeyLocator from(AuthorizeKey key, Parameter parameter) {
    return from(Optional.empty(), key.key(), parameter);
  }

  private static AuthorizeKeyLocator from(
      Optional<SecurableType> type, String key, Parameter parameter) {
    Param param = parameter.getAnnotation(Param.class);
    if (param != null) {
      // @Param bound: source is the URL query/path. If a key is explicitly set it must equal
      // @Param.value() so the SpEL variable name and URL parameter name agree; leaving it empty
      // reuses @Param.value() for both.
      if (!key.isEmpty() && !key.equals(param.value())) {
        throw new IllegalStateException(
            "Authorization key=\""
                + key
                + "\" on parameter "
                + parameter.getName()
                + " must match its companion @Param(\""
                + param.value()
                + "\")");
      }
      return AuthorizeKeyLocator.builder()
          .source(Source.PARAM)
          .type(type)
          .key(param.value())
          .build();
    }
    // No @Param: the key names a request body field.
    if (key.isEmpty()) {
      throw new RuntimeException(
          "Couldn't find param key for authorization key: " + parameter.getName());
    }
    return AuthorizeKeyLocator.builder().source(Source.PAYLOAD).type(type).key(key).build();
  }
}
