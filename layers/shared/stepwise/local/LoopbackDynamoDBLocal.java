// Starts AWS's DynamoDB Local listening on 127.0.0.1 only.
//
// DynamoDB Local has no option for the address it listens on: its Jetty server is made with a port alone,
// which listens on every interface, so anyone on the network could read and change every run. This
// launcher builds the server from the same command line as DynamoDB Local's own main, sets the host of
// its connectors to the loopback address before it starts, and starts it. stepwise.local.dynamodb_local
// compiles it once with the JDK compiler module of the Java that runs it.
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public final class LoopbackDynamoDBLocal {
    private LoopbackDynamoDBLocal() {}

    public static void main(String[] args) throws Exception {
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        Field field = DynamoDBProxyServer.class.getDeclaredField("server");
        field.setAccessible(true);
        Server server = (Server) field.get(proxy);
        for (Connector connector : server.getConnectors()) {
            ((ServerConnector) connector).setHost("127.0.0.1");
        }
        proxy.start();
    }
}
